"""Byte layouts of Flink connector state: FLIP-27 file source splits and their enumerator's
checkpoint, the FileSink writer's bucket states and the Sink V2 committer's committables.

Every element is a `SimpleVersionedSerialization` frame (int version, int length, payload).
Each parser reads one payload strictly: every length and count is checked against the bytes
left before anything is allocated, and a payload must be consumed to its last byte; any
mismatch raises :class:`LayoutMismatch` (the caller then keeps the element as bytes, or
fails the state when the frame itself is broken). Integers are big-endian (Java's
`DataOutput`) unless named little-endian (`ByteBuffer` with `LITTLE_ENDIAN`).

Layouts (Flink 1.15 to 2.3, `flink-connector-files` and the sink runtime):

* FileSourceSplit v1: UTF split id, Path, long offset, long length, long modification
  time, long file size, int n + n UTF hostnames, bool + (long offset, long records after
  offset) reader position.
* Path: bool has URI; nullable StringValue scheme, user info, host; int port; nullable
  StringValue path, query, fragment (a nullable string is a bool, then the string).
* PendingSplitsCheckpoint v1 (little-endian): int 0xDEADBEEF, int split serializer
  version, int splits, int paths, splits as (int n, n bytes), paths as (int n, UTF-8).
* Source coordinator checkpoint: int coordinator serde version, int enumerator serializer
  version, int n, n bytes of the enumerator's checkpoint.
* FileWriterBucketState v3: int 0x1E764B79, frame(int n little-endian + UTF-8 bucket id),
  UTF bucket path, long creation time, bool + frame(in-progress file recoverable).
* In-progress recoverable v2: int 0xB3A4073D, bool + UTF target path, frame(resumable);
  pending recoverable v2: int 0x2C853C89, bool + UTF target path, long size, frame(commit
  recoverable); local file system recoverable v1 (little-endian): int 0x1E744B57, long
  offset, int target length, int temp length, target and temp path (UTF-8).
* CommittableCollector v2: int 0xB91F252C, list(checkpoint: long id, int subtasks,
  list(subtask: int id, list(request: frame(committable), int retries, int state), int
  committables, int failed)), a list being int version, int n, n × (int length, bytes); the
  subtask list's version is 2 in Flink 2.x, 1 in Flink 1.x, whose subtask has int drained
  between committables and failed.
* FileSinkCommittable v2: int 0x1E765C80, UTF bucket id, bool + frame(pending file), bool
  + frame(in-progress file to clean up), bool + UTF compacted file to clean up (v1: no
  bucket id, no compacted file).
"""

from __future__ import annotations

import struct

from .binary import Reader

FILE_SPLIT_VERSION = 1
PENDING_SPLITS_MAGIC = 0xDEADBEEF
BUCKET_STATE_MAGIC = 0x1E764B79
IN_PROGRESS_MAGIC = 0xB3A4073D
PENDING_FILE_MAGIC = 0x2C853C89
LOCAL_RECOVERABLE_MAGIC = 0x1E744B57
COLLECTOR_MAGIC = 0xB91F252C
COMMITTABLE_MAGIC = 0x1E765C80
REQUEST_STATES = ("RECEIVED", "RETRY", "FAILED", "COMMITTED")  # CommitRequestState ordinals
_LE_I32 = struct.Struct("<i")
_LE_I64 = struct.Struct("<q")


class LayoutMismatch(Exception):
    """The bytes are not (or not wholly) the layout tried."""


def _run(parse, payload: bytes, what: str):
    """*parse* over all of *payload*: any read past the end, bad magic or bytes left over
    is a LayoutMismatch."""
    r = Reader(payload, what)
    try:
        out = parse(r)
    except LayoutMismatch:
        raise
    except Exception as e:  # a bounds check of the reader, a bad string: not this layout
        raise LayoutMismatch(f"{what}: {e}") from None
    if r.remaining:
        raise LayoutMismatch(f"{what}: {r.remaining} byte(s) left after the {what}")
    return out


def frame(r: Reader) -> tuple[int, bytes]:
    """One `SimpleVersionedSerialization` frame: (version, payload), its length checked."""
    version, n = r.int(), r.int()
    if n < 0 or n > r.remaining:
        raise LayoutMismatch(f"frame of {n} byte(s) with {r.remaining} left")
    return version, r.bytes(n)


def _magic(r: Reader, expected: int, what: str) -> None:
    found = r.int() & 0xFFFFFFFF
    if found != expected:
        raise LayoutMismatch(f"{what}: magic number {found:08X}, not {expected:08X}")


def _count(r: Reader, n: int, least: int) -> int:
    """*n* items of at least *least* bytes each must fit in what is left."""
    if n < 0 or n * least > r.remaining:
        raise LayoutMismatch(f"impossible count {n} ({r.remaining} byte(s) left)")
    return n


def _nullable_string(r: Reader) -> str | None:
    return r.string_value() if r.bool() else None


def flink_path(r: Reader) -> str | None:
    """Flink's `Path.serializeToDataOutputView` as the path's URI text (as `Path.toString`)."""
    if not r.bool():
        return None
    scheme, user, host = _nullable_string(r), _nullable_string(r), _nullable_string(r)
    port = r.int()
    path, query, fragment = _nullable_string(r), _nullable_string(r), _nullable_string(r)
    out = f"{scheme}:" if scheme else ""
    if host is not None:
        out += "//" + (f"{user}@" if user else "") + host + (f":{port}" if port != -1 else "")
    out += path or ""
    out += f"?{query}" if query is not None else ""
    return out + (f"#{fragment}" if fragment is not None else "")


# --- file source ------------------------------------------------------------------------

def file_split(payload: bytes) -> dict:
    """A `FileSourceSplit` (serializer version 1) as a dict of the split's columns."""
    def parse(r: Reader) -> dict:
        split = {"split_id": r.utf(), "path": flink_path(r), "offset": r.long(), "length": r.long(),
                 "file_modification_time": r.long(), "file_size": r.long()}
        split["hostnames"] = [r.utf() for _ in range(_count(r, r.int(), 2))]
        has_position = r.bool()
        split["reader_offset"] = r.long() if has_position else None
        split["reader_records_after_offset"] = r.long() if has_position else None
        return split
    return _run(parse, payload, "file source split")


def _le_int(r: Reader) -> int:
    return _LE_I32.unpack(r.bytes(4))[0]


def pending_splits(payload: bytes) -> tuple[int, list[dict], list[str]]:
    """A FileSource enumerator's `PendingSplitsCheckpoint` (v1): (split serializer version,
    the splits not yet assigned, the paths already processed)."""
    def parse(r: Reader):
        if _le_int(r) & 0xFFFFFFFF != PENDING_SPLITS_MAGIC:
            raise LayoutMismatch("pending splits: bad magic number")
        version, n_splits, n_paths = _le_int(r), _le_int(r), _le_int(r)
        if version != FILE_SPLIT_VERSION:
            raise LayoutMismatch(f"pending splits: split serializer version {version}")
        splits = [file_split(_le_bytes(r)) for _ in range(_count(r, n_splits, 4))]
        paths = [_le_bytes(r).decode("utf-8") for _ in range(_count(r, n_paths, 4))]
        return version, splits, paths
    return _run(parse, payload, "pending splits checkpoint")


def _le_bytes(r: Reader) -> bytes:
    n = _le_int(r)
    if n < 0 or n > r.remaining:
        raise LayoutMismatch(f"{n} byte(s) with {r.remaining} left")
    return r.bytes(n)


def coordinator_checkpoint(data: bytes) -> tuple[int, int, bytes]:
    """A source coordinator's checkpoint: (coordinator serde version, enumerator serializer
    version, the enumerator's checkpoint bytes)."""
    def parse(r: Reader):
        serde, version = r.int(), r.int()
        n = r.int()
        if n < 0 or n > r.remaining:
            raise LayoutMismatch(f"enumerator checkpoint of {n} byte(s) with {r.remaining} left")
        return serde, version, r.bytes(n)
    return _run(parse, data, "source coordinator state")


# --- file sink ----------------------------------------------------------------------------

def local_recoverable(version: int, payload: bytes) -> dict:
    """The local file system's resumable or commit recoverable (v1): offset, target, temp."""
    def parse(r: Reader) -> dict:
        if version != 1 or _le_int(r) & 0xFFFFFFFF != LOCAL_RECOVERABLE_MAGIC:
            raise LayoutMismatch("not a local file system recoverable")
        offset = _LE_I64.unpack(r.bytes(8))[0]
        n_target, n_temp = _le_int(r), _le_int(r)
        if n_target < 0 or n_temp < 0 or n_target + n_temp != r.remaining:
            raise LayoutMismatch("recoverable path lengths do not fill it")
        return {"offset": offset, "target": r.bytes(n_target).decode("utf-8"),
                "temp": r.bytes(n_temp).decode("utf-8")}
    return _run(parse, payload, "recoverable")


def _recoverable_columns(prefix: str, version: int, payload: bytes) -> dict:
    """A recoverable as columns: decoded when the local file system wrote it, else its
    version and bytes (the object stores' and HDFS's recoverables stay bytes)."""
    try:
        rec = local_recoverable(version, payload)
        raw = None
    except LayoutMismatch:
        rec, raw = {"offset": None, "target": None, "temp": None}, payload
    return {f"{prefix}_target": rec["target"], f"{prefix}_temp": rec["temp"], f"{prefix}_offset": rec["offset"],
            f"{prefix}_version": version, f"{prefix}_raw": raw}


def in_progress_file(version: int, payload: bytes) -> dict:
    """An `OutputStreamBasedInProgressFileRecoverable` (v2)."""
    return _file_recoverable(version, payload, IN_PROGRESS_MAGIC, "in-progress file", "in_progress", "resumable")


def pending_file(version: int, payload: bytes) -> dict:
    """An `OutputStreamBasedPendingFileRecoverable` (v2): as an in-progress one, with its size."""
    return _file_recoverable(version, payload, PENDING_FILE_MAGIC, "pending file", "pending", "commit")


def _file_recoverable(version: int, payload: bytes, magic: int, what: str, name: str, prefix: str) -> dict:
    """A file recoverable of the output-stream-based writers (v2): its target path (optional),
    a pending file's size, then the file system's own recoverable (*prefix*'s columns)."""
    def parse(r: Reader) -> dict:
        if version != 2:
            raise LayoutMismatch(f"{what} version {version}")
        _magic(r, magic, what)
        out = {f"{name}_path": r.utf() if r.bool() else None}
        if name == "pending":
            out["pending_size"] = r.long()
        return {**out, **_recoverable_columns(prefix, *frame(r))}
    return _run(parse, payload, what)


def bucket_state(version: int, payload: bytes) -> dict:
    """A `FileWriterBucketState` (serializer version 3)."""
    def parse(r: Reader) -> dict:
        if version != 3:
            raise LayoutMismatch(f"bucket state version {version}")
        _magic(r, BUCKET_STATE_MAGIC, "bucket state")
        bucket_id = bucket_id_string(*frame(r))
        out = {"bucket_id": bucket_id, "bucket_path": r.utf(), "in_progress_file_creation_time": r.long()}
        out.update(in_progress_file(*frame(r)) if r.bool() else {})
        return out
    return _run(parse, payload, "bucket state")


def bucket_id_string(version: int, payload: bytes) -> str:
    """`SimpleVersionedStringSerializer` (v1): int length little-endian, UTF-8."""
    def parse(r: Reader) -> str:
        if version != 1:
            raise LayoutMismatch(f"bucket id version {version}")
        n = _le_int(r)
        if n != r.remaining:
            raise LayoutMismatch("bucket id length does not fill it")
        return r.bytes(n).decode("utf-8")
    return _run(parse, payload, "bucket id")


def file_committable(version: int, payload: bytes) -> dict:
    """A `FileSinkCommittable` (v1 or v2)."""
    def parse(r: Reader) -> dict:
        if version not in (1, 2):
            raise LayoutMismatch(f"committable version {version}")
        _magic(r, COMMITTABLE_MAGIC, "file sink committable")
        out = {"bucket_id": r.utf() if version >= 2 else None}
        out.update(pending_file(*frame(r)) if r.bool() else {})
        cleanup = in_progress_file(*frame(r)) if r.bool() else None
        out["in_progress_to_clean_up"] = None if cleanup is None else cleanup["in_progress_path"]
        out["compacted_to_clean_up"] = (r.utf() if r.bool() else None) if version >= 2 else None
        return out
    return _run(parse, payload, "file sink committable")


def versioned_list(r: Reader, expected: tuple[int, ...]) -> tuple[int, list[bytes]]:
    """`writeVersionAndSerializeList`: int version, int n, n × (int length, bytes)."""
    version = r.int()
    if version not in expected:
        raise LayoutMismatch(f"list version {version}")
    items = []
    for _ in range(_count(r, r.int(), 4)):
        n = r.int()
        if n < 0 or n > r.remaining:
            raise LayoutMismatch(f"list item of {n} byte(s) with {r.remaining} left")
        items.append(r.bytes(n))
    return version, items


def committables(version: int, payload: bytes) -> list[dict]:
    """A `CommittableCollector` (v2) of FileSink committables: one dict per commit request."""
    def parse(r: Reader) -> list[dict]:
        if version != 2:
            raise LayoutMismatch(f"committable collector version {version}")
        _magic(r, COLLECTOR_MAGIC, "committable collector")
        _, checkpoints = versioned_list(r, (1,))
        return [row for c in checkpoints for row in _run(_checkpoint, c, "checkpoint committables")]
    return _run(parse, payload, "committable collector")


def _checkpoint(r: Reader) -> list[dict]:
    checkpoint_id, n_subtasks = r.long(), r.int()
    sub_version, subtasks = versioned_list(r, (1, 2))
    rows = []
    for sub in subtasks:
        for row in _run(lambda s: _subtask_committables(s, sub_version), sub, "subtask committables"):
            rows.append({"checkpoint_id": checkpoint_id, "number_of_subtasks": n_subtasks, **row})
    return rows


def _subtask_committables(r: Reader, version: int) -> list[dict]:
    """A `SubtaskCommittableManager`: v2 (Flink 2.x) int id, requests, int committables, int failed;
    v1 (Flink 1.x) has int drained between committables and failed."""
    subtask_id = r.int()
    _, requests = versioned_list(r, (0,))
    n_committables = r.int()
    n_drained = r.int() if version == 1 else None
    n_failed = r.int()
    rows = [_run(_request, q, "commit request") for q in requests]
    return [{"subtask_id": subtask_id, **q, "subtask_committables": n_committables, "subtask_drained": n_drained,
             "subtask_failed": n_failed} for q in rows]


def _request(r: Reader) -> dict:
    committable = file_committable(*frame(r))
    retries, state = r.int(), r.int()
    if not 0 <= state < len(REQUEST_STATES):
        raise LayoutMismatch(f"commit request state {state}")
    return {**committable, "retries": retries, "request_state": REQUEST_STATES[state]}
