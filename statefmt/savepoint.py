"""statectl's own savepoints: opening one, shallow copies, output checks and the atomic commit.

Both own physical formats (canonical Parquet and RocksDB) share this `_metadata`
document; :mod:`.formats` chooses between it and Apache Flink's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

from .errors import StatectlError, UnsafeReferenceError
from .fs import Location
from .locations import METADATA_FILE
from .metadata import decode, encode
from .model import DataFile, FileRef, LineageEntry, Operator, Savepoint
from .refs import check_lineage_location


def load_statectl(loc: Location, data: bytes) -> Savepoint:
    """The savepoint of statectl's own format at *loc*, from its `_metadata` *data*, checked."""
    sp = decode(data, source=str(loc.child(METADATA_FILE))).replace(location=loc.uri)
    return check_lineage(sp)


def named_files(data: bytes, source: str) -> set[str]:
    """The files inside its own folder that a committed own `_metadata` names (none when
    *data* is not a readable document: nothing of it is removed)."""
    try:
        sp = decode(data, source=source)
    except StatectlError:
        return set()
    return {f.ref.path for _, f in sp.data_files() if not f.ref.is_shared}


def _users_of(sp: Savepoint, savepoint_id: str) -> str:
    """The operators whose files lie in lineage entry *savepoint_id*, for error messages."""
    labels = sorted({op.label for op, f in sp.data_files() if f.ref.savepoint == savepoint_id})
    return "operator " + ", ".join(labels) if labels else "lineage"


def check_lineage(sp: Savepoint) -> Savepoint:
    """*sp* with every lineage location checked and opened with the user's filesystem options.

    A lineage location must be an absolute location on the savepoint's own
    filesystem (see :func:`refs.check_lineage_location`) and, when it exists,
    hold the savepoint the entry names: so `_metadata` cannot point statectl at
    an arbitrary directory. A location that is gone is left for the reader or
    validator to report as a missing dependency.
    """
    entries = []
    for e in sp.lineage:
        where = _users_of(sp, e.savepoint_id)
        location = check_lineage_location(e.location, sp.location, where)
        base = Location(location)
        if base.exists():
            meta = base.child(METADATA_FILE)
            try:
                found = decode(meta.read_bytes(), source=str(meta)).savepoint_id \
                    if meta.exists() else None
            except StatectlError:
                found = None
            if found != e.savepoint_id:
                raise UnsafeReferenceError(
                    f"{where}: lineage location {e.location!r} does not hold savepoint "
                    f"{e.savepoint_id}")
        entries.append(LineageEntry(e.savepoint_id, location))
    return sp.replace(lineage=tuple(entries)) if entries else sp


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


def write_metadata(sp: Savepoint, location: str | Location) -> tuple[Savepoint, set[str]]:
    """Write `_metadata` last, atomically: before it exists there is no savepoint.

    Every data file must already be in place. Returns *sp* bound to *location* and the files
    inside it that *sp* names. (An overwrite's removal of the files it replaced is the seam's
    `formats.commit_staged`, for every family.)
    """
    loc = Location.of(location)
    if any(e.location == loc.uri for e in sp.lineage):
        raise StatectlError(f"{loc}: a savepoint cannot reference itself as its base")
    loc.make_dirs()
    loc.child(METADATA_FILE).write_bytes_atomically(encode(sp))
    return sp.replace(location=loc.uri), {f.ref.path for _, f in sp.data_files() if not f.ref.is_shared}
