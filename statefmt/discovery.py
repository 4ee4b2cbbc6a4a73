"""Snapshots under a folder: the savepoints and retained checkpoints a job's folders hold.

A job's checkpoint folder holds ``chk-N/`` folders (each a checkpoint once its `_metadata`
is written; one without is still being written, or was abandoned) beside ``shared/`` and
``taskowned/``; a savepoint folder holds ``savepoint-…/`` folders. A snapshot is any folder
within :data:`DEPTH` levels whose `_metadata` loads, whatever its format. Newest first
(:func:`newest_first`): the time its `_metadata` records (Flink's: the file's modification
time), in whole seconds; within one second, by lineage, then by location.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import NotASavepointError, StatectlError
from .formats import SavepointFormat, load_sniffed
from .fs import Location
from .locations import METADATA_FILE
from .model import Savepoint

DEPTH = 3
_CHECKPOINT = re.compile(r"chk-(\d+)")
_NOT_SNAPSHOTS = {"shared", "taskowned"}  # a checkpoint folder's files of several checkpoints


@dataclass(frozen=True)
class Snapshot:
    location: str
    savepoint_id: str
    kind: str  # savepoint | checkpoint
    checkpoint: int | None  # N of a chk-N folder
    incremental: bool  # some of its files lie outside its folder (shared, or a base's)
    family: str  # flink | statectl
    formats: tuple[str, ...]  # the operators' physical formats
    created_at: str
    bytes: int
    operators: int


@dataclass(frozen=True)
class Unreadable:
    location: str
    reason: str


def find_snapshots(folder: str | Location) -> tuple[list[Snapshot], list[Unreadable]]:
    """The snapshots under *folder* (newest first), and the `_metadata` files that do not load."""
    root = Location.of(folder)
    if not root.is_dir():
        raise NotASavepointError(f"{root}: no such directory")
    found, unreadable = [], []
    for where in _metadata_folders(root):
        try:
            fmt, sp = load_sniffed(where)
        except StatectlError as e:
            unreadable.append(Unreadable(where.uri, str(e)))
            continue
        found.append((_snapshot(fmt, sp), frozenset(e.savepoint_id for e in sp.lineage)))
    return newest_first(found), unreadable


def newest_first(found: list[tuple[Snapshot, frozenset[str]]]) -> list[Snapshot]:
    """Snapshots (each with the ids of the savepoints its lineage names) newest first: by the
    time each records, and within one second (times have whole seconds) after every snapshot
    made from them (:func:`_made_after`); snapshots the rule leaves unordered by location."""
    by_time: dict[str, list] = {}
    for item in sorted(found, key=lambda item: item[0].location):
        by_time.setdefault(item[0].created_at, []).append(item)
    out: list[Snapshot] = []
    for created_at in sorted(by_time, reverse=True):
        left = by_time[created_at]
        while left:  # the first by location that no snapshot still left was made after
            i = next((i for i, (s, _) in enumerate(left)
                      if not any(_made_after(other, s) for other in left)), 0)  # 0: a lineage circle
            out.append(left.pop(i)[0])
    return out


def _made_after(item: tuple[Snapshot, frozenset[str]], other: Snapshot) -> bool:
    """Whether *item* is known to be newer than *other*: its lineage names *other* (it was
    derived from it), or both are checkpoints of one job and its number is higher."""
    snapshot, bases = item
    if other.savepoint_id in bases:
        return True
    return snapshot.checkpoint is not None and other.checkpoint is not None \
        and _job(snapshot) == _job(other) and snapshot.checkpoint > other.checkpoint


def _job(checkpoint: Snapshot) -> str:
    """A checkpoint's job folder: the one holding its ``chk-N`` folder."""
    return checkpoint.location.rstrip("/").rsplit("/", 1)[0]


def _metadata_folders(root: Location) -> list[Location]:
    folders = []
    for path in root.list_files():
        parts = path.split("/")
        if parts[-1] != METADATA_FILE or len(parts) > DEPTH + 1 or _NOT_SNAPSHOTS & set(parts[:-1]):
            continue
        folders.append(root.child("/".join(parts[:-1])) if len(parts) > 1 else root)
    return folders


def _snapshot(fmt: SavepointFormat, sp: Savepoint) -> Snapshot:
    name = sp.location.rstrip("/").rsplit("/", 1)[-1]
    number = _CHECKPOINT.fullmatch(name)
    files = [f for _, f in sp.data_files()]
    formats = tuple(sorted({str(op.format) for op in sp.operators}))
    return Snapshot(
        location=sp.location, savepoint_id=sp.savepoint_id,
        kind="checkpoint" if number else "savepoint", checkpoint=int(number.group(1)) if number else None,
        incremental=any(_outside(sp, f.ref) for f in files),
        family=fmt.family,
        formats=formats, created_at=sp.created_at, bytes=sum(f.size for f in files),
        operators=len(sp.operators))


def _outside(sp: Savepoint, ref) -> bool:
    if ref.is_shared:
        return True
    return ref.location is not None and not ref.location.startswith(sp.location.rstrip("/") + "/") \
        and not ref.location.startswith("file:" + sp.location.rstrip("/") + "/")


def choose_snapshot(folder: str, checkpoint: int | None = None) -> tuple[str, str | None]:
    """The savepoint a reading command opens for *folder*, and a note naming the choice:
    *folder* itself when it holds `_metadata`, else the newest complete snapshot under it
    (or checkpoint *checkpoint*)."""
    loc = Location.of(folder)
    if loc.child(METADATA_FILE).exists():
        if checkpoint is not None:
            raise NotASavepointError(f"{folder} is one snapshot: --checkpoint chooses among the snapshots "
                                     "under a folder")
        return folder, None
    if not loc.is_dir():
        return folder, None  # the load says what is wrong
    found, _ = find_snapshots(loc)
    if checkpoint is not None:
        found = [s for s in found if s.checkpoint == checkpoint]
        if not found:
            raise NotASavepointError(f"{folder}: no complete checkpoint chk-{checkpoint} under it "
                                     "(statectl ls lists what is there)")
    if not found:
        return folder, None
    chosen = found[0]
    return chosen.location, f"note: using {chosen.location} ({chosen.kind}, {chosen.created_at}), " \
        f"the newest of {len(found)} snapshot(s) under {folder}" if checkpoint is None else \
        f"note: using {chosen.location} ({chosen.kind} {checkpoint}, {chosen.created_at})"
