"""State handles of a Flink `_metadata`, as typed frozen values.

A *stream* handle names bytes (inline, a file beside `_metadata`, an absolute
path, a segment of a merged file); the keyed and operator handles point into
streams. Handle type bytes are those of Flink's `MetadataV2V3SerializerBase`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import UnsupportedFlinkFeature
from .binary import Reader

NULL = 0
BYTE_STREAM = 1
FILE = 2
KEY_GROUPS = 3
OPERATOR_STREAM = 4
INCREMENTAL_V1 = 5
RELATIVE_FILE = 6
KEY_GROUPS_SAVEPOINT = 7
CHANGELOG = {8: "changelog (ChangelogStateBackendHandle)", 9: "changelog (ChangelogStateHandleStreamImpl)",
             10: "changelog (InMemoryChangelogStateHandle)", 13: "changelog (ChangelogStateBackendHandle v2)",
             14: "changelog (ChangelogStateHandleStreamImpl v2)"}
INCREMENTAL_V2 = 11
KEY_GROUPS_V2 = 12
SEGMENT_FILE = 15
EMPTY_SEGMENT_FILE = 16
SEGMENT_OPERATOR = 17

DISTRIBUTION_MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")


# --- stream handles ----------------------------------------------------------

@dataclass(frozen=True)
class InlineStream:
    """Bytes kept inside `_metadata` (ByteStreamStateHandle); *name* never existed as a file."""
    name: str
    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class RelativeFile:
    """A file beside `_metadata`."""
    relative_path: str
    size: int


@dataclass(frozen=True)
class AbsoluteFile:
    """A file named by its full path or URI, kept as written (e.g. a checkpoint's shared/ file)."""
    path: str
    size: int


@dataclass(frozen=True)
class SegmentFile:
    """A byte range of a merged file (file-merging checkpoints)."""
    path: str
    start: int
    size: int
    scope: int
    logical_file_id: str
    empty: bool = False  # handle 16, EmptySegmentFileStateHandle


StreamHandle = InlineStream | RelativeFile | AbsoluteFile | SegmentFile


# --- keyed and operator handles -----------------------------------------------

@dataclass(frozen=True)
class KeyGroupsStream:
    """A full keyed stream with one offset per key group.

    *layout* is ``canonical`` (handle 7, savepoint format CANONICAL) or
    ``native`` (handles 3 and 12: the heap backend's own snapshot). *handle_id*
    is the state handle id of handle 12 (None for 3 and 7).
    """
    layout: str
    start: int
    offsets: tuple[int, ...] = field(repr=False)
    stream: StreamHandle
    handle_id: str | None = None

    @property
    def key_groups(self) -> range:
        return range(self.start, self.start + len(self.offsets))


@dataclass(frozen=True)
class IncrementalRocksDB:
    """A RocksDB snapshot (native savepoint or checkpoint): a meta stream plus files by local name.

    Handle 11 (v2) carries *checkpointed_size* and *handle_id*; handle 5 (v1) has neither (None).
    """
    checkpoint_id: int
    backend_id: str
    start: int
    count: int
    meta: StreamHandle
    shared: tuple[tuple[str, StreamHandle], ...]
    private: tuple[tuple[str, StreamHandle], ...]
    checkpointed_size: int | None = None
    handle_id: str | None = None

    @property
    def key_groups(self) -> range:
        return range(self.start, self.start + self.count)

    @property
    def files(self) -> tuple[tuple[str, StreamHandle], ...]:
        return self.shared + self.private


KeyedHandle = KeyGroupsStream | IncrementalRocksDB


def keyed_streams(handle: KeyedHandle) -> list[StreamHandle]:
    """Every stream a keyed handle names: its key-group stream, or a RocksDB snapshot's meta
    information stream and database files."""
    return [handle.stream] if isinstance(handle, KeyGroupsStream) else [handle.meta] + [s for _, s in handle.files]


@dataclass(frozen=True)
class OperatorStateInfo:
    name: str
    mode: str
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class SegmentDirs:
    """What handle 17 (a file-merging operator stream) adds to handle 4."""
    task_owned: str
    shared: str
    empty: bool


@dataclass(frozen=True)
class OperatorStream:
    states: tuple[OperatorStateInfo, ...]
    stream: StreamHandle
    segment: SegmentDirs | None = None  # handle 17 only


# --- parsing ------------------------------------------------------------------

def read_stream_handle(r: Reader, context: str, type_byte: int | None = None) -> StreamHandle | None:
    t = r.ubyte() if type_byte is None else type_byte
    if t == NULL:
        return None
    if t == BYTE_STREAM:
        name = r.utf()
        n = r.int()
        if n < 0:
            raise r.error(f"negative inline stream length {n}")
        return InlineStream(name, r.bytes(n))
    if t == FILE:
        size = r.long()
        return AbsoluteFile(r.utf(), size)
    if t == RELATIVE_FILE:
        path = r.utf()
        return RelativeFile(path, r.long())
    if t in (SEGMENT_FILE, EMPTY_SEGMENT_FILE):
        start, size, scope = r.long(), r.long(), r.int()
        path = r.utf()
        return SegmentFile(path, start, size, scope, r.utf(), empty=t == EMPTY_SEGMENT_FILE)
    raise _unsupported(t, context, r, "stream")


def _unsupported(t: int, context: str, r: Reader, what: str) -> Exception:
    if t in CHANGELOG:
        return UnsupportedFlinkFeature(
            f"{r.source}: {context}: {CHANGELOG[t]} state handles are not supported "
            "(a checkpoint of the changelog state backend)")
    return UnsupportedFlinkFeature(
        f"{r.source}: {context}: unknown {what} state handle type {t} at offset {r.base + r.pos - 1}")


def _offsets(r: Reader, count: int) -> tuple[int, ...]:
    if count < 0:
        raise r.error(f"negative count {count}")
    r_start = r.pos
    r.skip(8 * count)
    return struct.unpack_from(f">{count}q", r.data, r_start)


def read_keyed_handle(r: Reader, context: str) -> KeyedHandle | None:
    t = r.ubyte()
    if t == NULL:
        return None
    if t in (KEY_GROUPS, KEY_GROUPS_SAVEPOINT, KEY_GROUPS_V2):
        start, count = r.int(), r.int()
        offsets = _offsets(r, count)
        stream = read_stream_handle(r, context)
        handle_id = r.utf() if t == KEY_GROUPS_V2 else None
        layout = "canonical" if t == KEY_GROUPS_SAVEPOINT else "native"
        return KeyGroupsStream(layout, start, offsets, stream, handle_id)
    if t in (INCREMENTAL_V1, INCREMENTAL_V2):
        checkpoint_id = r.long()
        backend_id = r.utf()
        start, count = r.int(), r.int()
        checkpointed_size = r.long() if t == INCREMENTAL_V2 else None
        meta = read_stream_handle(r, context)
        shared = _named_streams(r, context)
        private = _named_streams(r, context)
        handle_id = r.utf() if t == INCREMENTAL_V2 else None
        return IncrementalRocksDB(checkpoint_id, backend_id, start, count, meta, shared, private,
                                  checkpointed_size, handle_id)
    raise _unsupported(t, context, r, "keyed")


def _named_streams(r: Reader, context: str) -> tuple[tuple[str, StreamHandle], ...]:
    n = r.int()
    if n < 0:
        raise r.error(f"negative count {n}")
    return tuple((r.utf(), read_stream_handle(r, context)) for _ in range(n))


def read_operator_handle(r: Reader, context: str) -> OperatorStream | None:
    t = r.ubyte()
    if t == NULL:
        return None
    if t not in (OPERATOR_STREAM, SEGMENT_OPERATOR):
        raise _unsupported(t, context, r, "operator")
    n = r.int()
    states = []
    for _ in range(n):
        name = r.utf()
        mode = r.ubyte()
        if mode >= len(DISTRIBUTION_MODES):
            raise r.error(f"unknown operator state distribution mode {mode}", r.pos - 1)
        states.append(OperatorStateInfo(name, DISTRIBUTION_MODES[mode], _offsets(r, r.int())))
    segment = SegmentDirs(r.utf(), r.utf(), r.bool()) if t == SEGMENT_OPERATOR else None
    return OperatorStream(tuple(states), read_stream_handle(r, context), segment)
