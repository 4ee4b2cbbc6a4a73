"""The format seam: which format a savepoint is, chosen once, and what each format does.

A :class:`SavepointFormat` sniffs its `_metadata` from the first bytes, loads the
:class:`Savepoint` model, names the files a committed `_metadata` holds in its
folder, commits (lineage, then `_metadata`, then removal of the files it replaced)
and copies operators of a base (pointer copies, or self-contained). Registered in
:data:`FORMATS`, like PyIceberg's ``io`` scheme -> implementation registry:

- statectl's own ``canonical`` and ``rocksdb`` formats share one `_metadata` document
  (`docs/FORMAT.md`); each operator names its physical format, so sniffing finds the
  family and :func:`for_operator` the format of one operator;
- Apache Flink's savepoints and checkpoints (``flink``, `docs/FLINK.md`).

A new format implements the protocol and joins :data:`FORMATS`; nothing above
`statefmt` branches on it. This is the only module of `statefmt` that knows both
families; the Flink one is imported when a Flink savepoint is met.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

from .errors import NotASavepointError, StatectlError
from .fs import Location
from .ids import OperatorRef
from .locations import METADATA_FILE, FileCopy, remove_replaced
from .model import DataFile, LineageEntry, Operator, Savepoint
from .savepoint import commit as commit_statectl
from .savepoint import load_statectl, merge_lineage, named_files, shallow_copy
from .vocabulary import Format

if TYPE_CHECKING:
    import pyarrow as pa

NameFor = Callable[[str, "set[str]"], str]  # (file name, names taken) -> the copy's name


@dataclass(frozen=True)
class OperatorCopies:
    """Operators of a base as a new savepoint holds them, in their format's own terms
    (:class:`Operator` for statectl's formats, ``FlinkOperator`` for Flink's), with the
    lineage their files lie in and the files to copy beside the new `_metadata`."""
    operators: tuple
    lineage: tuple[LineageEntry, ...] = ()
    copies: tuple[FileCopy, ...] = ()


@dataclass(frozen=True)
class FlinkCommit:
    """A new Flink savepoint to commit: its `_metadata` bytes, its lineage (a shallow copy's
    bases) and the relative files this write put beside it."""
    metadata: bytes
    lineage: tuple[LineageEntry, ...] = ()
    files: frozenset[str] = frozenset()


class SavepointFormat(Protocol):
    name: str  # a :class:`Format` word
    family: str  # whose format: "statectl" or "flink" (`statectl ls`)

    def sniff(self, head: bytes) -> bool:
        """Whether a `_metadata` starting with *head* (its first bytes) is of this format."""

    def load(self, location: Location, data: bytes) -> Savepoint:
        """The model of the savepoint at *location* whose `_metadata` is *data*, checked."""

    def named_files(self, data: bytes, source: str) -> set[str]:
        """The files inside its own folder the committed `_metadata` *data* names."""

    def commit(self, out: Location, document, *, overwrite: bool = False) -> Savepoint:
        """Commit *document* at *out* (every data file already in place): lineage, then
        `_metadata`, atomically, then (with *overwrite*) the files of the savepoint it
        replaced that it does not name. Returns the committed savepoint's model."""

    def copy_operators(self, base: Savepoint, operator_ids: Sequence[str],
                       name_for: NameFor | None = None) -> OperatorCopies:
        """The operators *operator_ids* of *base* as pointer copies (their files referenced
        where they lie), or with *name_for* self-contained (the files to copy, named by it)."""

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        """Every data file of *op*'s states with the Arrow schema `validate` checks it
        against (None: a file that is not statectl's Parquet, checked by size and checksum)."""

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        """`validate --deep`: decode every file of *op* but those in *skip* (operator id,
        file path: already found bad)."""

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        """What `validate` says of a savepoint holding operators of this format, besides
        its problems: what it could not check, and why."""


@dataclass(frozen=True)
class Decoded:
    """What `validate --deep` decoded of one operator: rows, parts (splits or files) and
    the problems found, one line each."""
    rows: int = 0
    parts: int = 0
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatectlFormat:
    """statectl's own format family: one `_metadata` document for both physical formats.
    Sniffed last: its decoder names what is wrong with anything that is not Flink's.
    *keyed_parquet*: keyed state is Parquet files (canonical), not RocksDB databases, whose
    files carry a sha256 of their own and are checked by it alone."""
    name: str
    keyed_parquet: bool
    family = "statectl"

    def sniff(self, head: bytes) -> bool:
        return True

    def load(self, location: Location, data: bytes) -> Savepoint:
        return load_statectl(location, data)

    def named_files(self, data: bytes, source: str) -> set[str]:
        return named_files(data, source)

    def commit(self, out: Location, document: Savepoint, *, overwrite: bool = False) -> Savepoint:
        return commit_statectl(document, out, overwrite)

    def copy_operators(self, base: Savepoint, operator_ids: Sequence[str],
                       name_for: NameFor | None = None) -> OperatorCopies:
        """Pointer copies. Self-contained ones are made savepoint-wide after planning (the
        copies verified against their checksums: `writers.copying.make_self_contained`)."""
        if name_for is not None:
            raise StatectlError(f"{self.name}: operators are made self-contained with the whole savepoint")
        pairs = [shallow_copy(base, base.operator(OperatorRef(operator_id=i))) for i in operator_ids]
        return OperatorCopies(tuple(op for op, _ in pairs), merge_lineage(*(e for _, e in pairs)))

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        from .canonical import keyed_schema, operator_state_schema, timers_schema

        if op.keyed is not None:
            keyed = keyed_schema(op.keyed) if self.keyed_parquet else None
            yield from ((f, keyed) for f in op.keyed.files)
            yield from ((f, timers_schema(op.keyed)) for f in op.keyed.timers)
        for state in op.operator_states:
            yield from ((f, operator_state_schema(state)) for f in state.files)

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        if not self.keyed_parquet:
            return Decoded()  # the RocksDB files' sha256 is checked without --deep
        from .canonical import decode_pages

        return Decoded(*decode_pages(sp, op, skip))

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        return []


class FlinkFormat:
    """Apache Flink's savepoints and retained checkpoints (`statefmt/flink`)."""
    name = Format.FLINK
    family = "flink"

    def sniff(self, head: bytes) -> bool:
        from .flink.metadata import is_flink_metadata

        return is_flink_metadata(head)

    def load(self, location: Location, data: bytes) -> Savepoint:
        from .flink.model import load_flink

        return load_flink(location)

    def named_files(self, data: bytes, source: str) -> set[str]:
        from .flink.commit import named_files as flink_named_files

        return flink_named_files(data, source)

    def commit(self, out: Location, document: FlinkCommit, *, overwrite: bool = False) -> Savepoint:
        from .flink.lineage import commit_metadata
        from .flink.model import load_flink

        previous = previous_files(out) if overwrite else set()
        lineage_name = commit_metadata(out, document.metadata, document.lineage)
        remove_replaced(out, previous, document.files | ({lineage_name} if lineage_name else set()))
        return load_flink(out)

    def copy_operators(self, base: Savepoint, operator_ids: Sequence[str],
                       name_for: NameFor | None = None) -> OperatorCopies:
        from .flink.model import flink_savepoint
        from .flink.shallow import lineage_needed, pointer_copy, self_contained

        fsp = flink_savepoint(base)
        kept = [op for op in fsp.metadata.operators if op.operator_id in operator_ids]
        if name_for is not None:
            ops, copies = self_contained(fsp.location, kept, name_for)
            return OperatorCopies(tuple(ops), (), tuple(copies))
        return OperatorCopies(tuple(pointer_copy(fsp.location, op) for op in kept),
                              lineage_needed(fsp.location, fsp.savepoint_id, fsp.lineage, kept) if kept else ())

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        sections = [op.keyed.files, op.keyed.timers] if op.keyed is not None else []
        return ((f, None) for files in sections + [s.files for s in op.operator_states] for f in files)

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        from .flink.model import flink_savepoint
        from .flink.savepoint import decode_operator

        return Decoded(*decode_operator(flink_savepoint(sp).operator(op.operator_id)))

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        absolute = [f"operator {op.label}: absolute file reference {f.ref.path}" for op, f in sp.data_files()
                    if f.ref.location is not None and f.ref.savepoint is None]
        checked = ("Flink savepoint: its files have no checksums; every stream was decoded (--deep)" if deep
                   else "Flink savepoint: its files have no checksums, so only their presence and sizes "
                   "were checked (--deep decodes every stream)")
        return [checked, *absolute]


FORMATS: dict[str, SavepointFormat] = {  # sniffed in this order
    f.name: f for f in (FlinkFormat(), StatectlFormat(Format.CANONICAL, keyed_parquet=True),
                        StatectlFormat(Format.ROCKSDB, keyed_parquet=False))}


def sniff(head: bytes) -> SavepointFormat:
    """The format of a `_metadata` starting with *head*."""
    return next(f for f in FORMATS.values() if f.sniff(head))


def for_operator(op: Operator) -> SavepointFormat:
    """The format of one operator of a loaded savepoint."""
    return FORMATS[op.format]


def formats_of(sp: Savepoint) -> list[SavepointFormat]:
    """The formats of *sp*'s operators, each once, in the order of :data:`FORMATS`."""
    used = {op.format for op in sp.operators}
    return [f for name, f in FORMATS.items() if name in used]


def load(location: str | Location) -> Savepoint:
    """Read and check a savepoint's `_metadata`, of whichever format; the result knows its location."""
    return load_sniffed(location)[1]


def load_sniffed(location: str | Location) -> tuple[SavepointFormat, Savepoint]:
    """:func:`load`, with the format its `_metadata` was sniffed as (statectl's own: one of
    its family)."""
    loc = Location.of(location)
    meta = loc.child(METADATA_FILE)
    if not meta.exists():
        if loc.is_dir():
            raise NotASavepointError(
                f"{loc}: no {METADATA_FILE} file, so not a savepoint "
                "(or a write that never finished)"
            )
        raise NotASavepointError(f"{loc}: no such savepoint directory")
    data = meta.read_bytes()
    fmt = sniff(data[:4])
    return fmt, fmt.load(loc, data)


def previous_files(out: Location) -> set[str]:
    """The files of the savepoint already at *out*, of either family (removed after the
    commit of an overwrite when the new one does not name them)."""
    meta = out.child(METADATA_FILE)
    if not meta.exists():
        return set()
    data = meta.read_bytes()
    return sniff(data[:4]).named_files(data, str(meta))
