"""statectl's own format family at the format seam (`statefmt/seam.py`): canonical Parquet
and RocksDB share one `_metadata` document (`docs/FORMAT.md`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ..fs import Location
from ..model import DataFile, Operator, Savepoint
from ..savepoint import load_statectl, named_files, write_metadata
from ..seam import Decoded

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class StatectlFormat:
    """statectl's own format family: one `_metadata` document for both physical formats.
    Sniffed last: its decoder names what is wrong with anything that is not Flink's.
    *keyed_parquet*: keyed state is Parquet files (canonical), not RocksDB databases, whose
    files carry a sha256 of their own and are checked by it alone."""
    name: str
    keyed_parquet: bool
    family = "statectl"
    names_serializers = False

    def sniff(self, head: bytes) -> bool:
        return True

    def load(self, location: Location, data: bytes) -> Savepoint:
        return load_statectl(location, data)

    def named_files(self, data: bytes, source: str) -> set[str]:
        return named_files(data, source)

    def write_metadata(self, out: Location, document: Savepoint) -> tuple[Savepoint, set[str]]:
        return write_metadata(document, out)

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        from ..canonical import keyed_schema, operator_state_schema, timers_schema

        if op.keyed is not None:
            keyed = keyed_schema(op.keyed) if self.keyed_parquet else None
            yield from ((f, keyed) for f in op.keyed.files)
            yield from ((f, timers_schema(op.keyed)) for f in op.keyed.timers)
        for state in op.operator_states:
            yield from ((f, operator_state_schema(state)) for f in state.files)

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        if not self.keyed_parquet:
            return Decoded()  # the RocksDB files' sha256 is checked without --deep
        from ..canonical import decode_pages

        return Decoded(*decode_pages(sp, op, skip))

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        return []
