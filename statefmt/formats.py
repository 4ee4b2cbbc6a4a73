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

from .errors import NotASavepointError, SavepointExistsError, UsageError
from .flink.format import FlinkFormat
from .fs import Location
from .locations import METADATA_FILE, remove_replaced
from .model import Operator, Savepoint
from .own.format import StatectlFormat
from .seam import SavepointFormat, Staged
from .vocabulary import Format

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


def format_family(format: str) -> str:
    """The family ("statectl", "flink") of the physical format *format*."""
    try:
        return FORMATS[format].family
    except KeyError:
        *first, last = FORMATS
        raise UsageError(f"unknown physical format {format!r}; use {', '.join(first)} or {last}") from None


def family_of(sp: Savepoint) -> str:
    """The family of a loaded savepoint: its operators' (statectl's own for one without any)."""
    used = formats_of(sp)
    return used[0].family if used else FORMATS[Format.CANONICAL].family


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


def commit_staged(out: Location, staged: Staged, *, overwrite: bool = False) -> tuple[Savepoint, set[str]]:
    """Commit *staged* at *out*, for every family: its format puts its `_metadata` in place
    (atomically, last), then, with *overwrite*, the files the replaced savepoint owned (of
    whichever family it was: :func:`previous_files`) that the new one does not name are
    removed. Returns the committed savepoint and the files inside *out* it names."""
    meta = out.child(METADATA_FILE)
    if meta.exists() and not overwrite:
        raise SavepointExistsError(f"{out} already holds a savepoint; choose a new output")
    previous = previous_files(out) if overwrite else set()
    sp, owned = staged.format.write_metadata(out, staged.document)
    remove_replaced(out, previous, owned)
    return sp, owned


def commit(sp: Savepoint, location: str | Location, overwrite: bool = False) -> Savepoint:
    """Commit the statectl savepoint *sp* at *location* (its data files in place); see
    :func:`commit_staged`. Returns *sp* bound to *location*."""
    return commit_staged(Location.of(location), Staged(FORMATS[Format.CANONICAL], sp), overwrite=overwrite)[0]


def previous_files(out: Location) -> set[str]:
    """The files of the savepoint already at *out*, of either family (removed after the
    commit of an overwrite when the new one does not name them)."""
    meta = out.child(METADATA_FILE)
    if not meta.exists():
        return set()
    data = meta.read_bytes()
    return sniff(data[:4]).named_files(data, str(meta))
