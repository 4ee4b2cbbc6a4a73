"""Opening savepoints, locating their files, shallow copies, and the atomic commit."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

from .errors import MissingFileError, NotASavepointError, SavepointExistsError, StatectlError
from .fs import Location
from .metadata import decode, encode
from .flink.metadata import is_flink_metadata
from .model import DataFile, FileRef, LineageEntry, Operator, Savepoint

METADATA_FILE = "_metadata"


def load(location: str | Location) -> Savepoint:
    """Read and check a savepoint's `_metadata`; the result knows its location."""
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
    if is_flink_metadata(data[:4]):
        from .flink.model import load_flink

        return load_flink(loc)
    return decode(data, source=str(meta)).replace(location=loc.uri)


def file_location(sp: Savepoint, ref: FileRef) -> Location:
    """Where the file named by *ref* lies, for a savepoint read from disk."""
    if sp.location is None:
        raise StatectlError("the savepoint has no location yet")
    if ref.location is not None:  # a Flink file handle, resolved when loaded
        return Location(ref.location)
    if ref.savepoint is None:
        return Location(sp.location).child(ref.path)
    try:
        base = sp.lineage_entry(ref.savepoint)
    except KeyError:
        raise MissingFileError(f"{ref.path}: savepoint {ref.savepoint} is not in the lineage") from None
    return Location(base.location).child(ref.path)


def new_savepoint_id() -> str:
    return str(uuid.uuid4())


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def data_file_path(operator_id: str, kind: str, suffix: str = "") -> str:
    """A fresh relative path for a new data file of an operator.

    The random part keeps a retried task from overwriting a file another
    attempt may have finished.
    """
    tail = f"-{suffix}" if suffix else ""
    return f"{operator_id}/{kind}{tail}-{uuid.uuid4().hex[:12]}.parquet"


def shallow_copy(base: Savepoint, op: Operator) -> tuple[Operator, list[LineageEntry]]:
    """*op* of *base* with every file referenced where it lies, plus the lineage it needs.

    Files of *base* itself become references into *base*; files *base* already
    shared from elsewhere keep pointing there, so lineage never chains.
    """
    if base.location is None:
        raise StatectlError("a shallow copy needs a base read from disk")
    needed: dict[str, LineageEntry] = {}

    def rewrite(f: DataFile) -> DataFile:
        if f.ref.savepoint is None:
            needed[base.savepoint_id] = LineageEntry(base.savepoint_id, base.location)
            return dataclasses.replace(f, ref=FileRef(f.ref.path, base.savepoint_id))
        needed[f.ref.savepoint] = base.lineage_entry(f.ref.savepoint)
        return f

    return op.map_files(rewrite), list(needed.values())


def merge_lineage(*groups) -> tuple[LineageEntry, ...]:
    seen: dict[str, LineageEntry] = {}
    for group in groups:
        for entry in group:
            seen.setdefault(entry.savepoint_id, entry)
    return tuple(seen.values())


def prune_lineage(sp: Savepoint) -> Savepoint:
    """Drop lineage entries no file refers to any more (e.g. after a removal)."""
    used = {f.ref.savepoint for _, f in sp.data_files() if f.ref.savepoint}
    return sp.replace(lineage=tuple(e for e in sp.lineage if e.savepoint_id in used))


def check_output(location: str | Location) -> Location:
    """The output location, refused if it already holds a savepoint."""
    loc = Location.of(location)
    if loc.child(METADATA_FILE).exists():
        raise SavepointExistsError(f"{loc} already holds a savepoint; choose a new output")
    return loc


def commit(sp: Savepoint, location: str | Location) -> Savepoint:
    """Write `_metadata` last, atomically: before it exists there is no savepoint.

    Every data file must already be in place. Returns *sp* bound to *location*.
    """
    loc = check_output(location)
    if any(e.location == loc.uri for e in sp.lineage):
        raise StatectlError(f"{loc}: a savepoint cannot reference itself as its base")
    loc.make_dirs()
    loc.child(METADATA_FILE).write_bytes_atomically(encode(sp))
    return sp.replace(location=loc.uri)
