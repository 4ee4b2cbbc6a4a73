"""Apache Flink's savepoints and retained checkpoints at the format seam (`statefmt/seam.py`).
Imports the rest of `statefmt/flink` only when a Flink savepoint is met."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ..fs import Location
from ..model import DataFile, LineageEntry, Operator, Savepoint
from ..seam import Decoded
from ..vocabulary import Format

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class FlinkCommit:
    """A new Flink savepoint to commit: its `_metadata` bytes, its lineage (a shallow copy's
    bases) and the relative files this write put beside it."""
    metadata: bytes
    lineage: tuple[LineageEntry, ...] = ()
    files: frozenset[str] = frozenset()


class FlinkFormat:
    """Apache Flink's savepoints and retained checkpoints (`statefmt/flink`)."""
    name = Format.FLINK
    family = "flink"
    names_serializers = True

    def sniff(self, head: bytes) -> bool:
        from .metadata import is_flink_metadata

        return is_flink_metadata(head)

    def load(self, location: Location, data: bytes) -> Savepoint:
        from .model import load_flink

        return load_flink(location, data)

    def named_files(self, data: bytes, source: str) -> set[str]:
        from .commit import named_files as flink_named_files

        return flink_named_files(data, source)

    def write_metadata(self, out: Location, document: FlinkCommit) -> tuple[Savepoint, set[str]]:
        from .lineage import commit_metadata
        from .model import load_flink

        lineage_name = commit_metadata(out, document.metadata, document.lineage)
        return load_flink(out, document.metadata), set(document.files) | ({lineage_name} if lineage_name else set())

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        sections = [op.keyed.files, op.keyed.timers] if op.keyed is not None else []
        return ((f, None) for files in sections + [s.files for s in op.operator_states] for f in files)

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        from .model import flink_savepoint
        from .savepoint import decode_operator

        return Decoded(*decode_operator(flink_savepoint(sp).operator(op.operator_id)))

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        absolute = [f"operator {op.label}: absolute file reference {f.ref.path}" for op, f in sp.data_files()
                    if f.ref.location is not None and f.ref.savepoint is None]
        checked = ("Flink savepoint: its files have no checksums; every stream was decoded (--deep)" if deep
                   else "Flink savepoint: its files have no checksums, so only their presence and sizes "
                   "were checked (--deep decodes every stream)")
        return [checked, *absolute]
