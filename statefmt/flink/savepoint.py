"""A Flink savepoint or retained checkpoint, opened without a JVM.

:func:`open_flink_savepoint` parses `_metadata`, reads each stream's header
once, and describes every operator and state (for `info`), with the
:class:`FlinkSplit` units of work that :func:`read_split` decodes into Arrow
(one Spark task per split). Nothing here reads state data until a split is read.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import (FlinkFormatError, MissingFileError, NotASavepointError, StatectlError,
                      UnknownOperatorError, UnsupportedFlinkFeature)
from ..fs import Location
from ..model import KEYED_PART, LineageEntry
from ..resolve import resolve_reference
from ..scratch import new_scratch_dir
from . import tables as TB
from .handles import (IncrementalRocksDB, InlineStream, KeyGroupsStream, OperatorStream,
                      RelativeFile, SegmentFile, StreamHandle)
from .lineage import check_present, checkpoint_roots, flink_savepoint_id, lineage_roots, read_lineage
from .headers import KeyedHeader, OperatorHeader, StateMeta, read_keyed_header, read_operator_header
from .metadata import FlinkMetadata, FlinkOperator, is_flink_metadata, parse_metadata
from .streams import (StateRows, decode_canonical_state, decode_heap_native, decode_operator_state,
                      prefix_bytes, raw_from_extents, scan_canonical)
from .types import Buf, FlinkType

METADATA = "_metadata"
SPLIT_BYTES = 64 * 1024 * 1024  # a canonical or heap stream is cut into key-group ranges of about this size
BATCH_ROWS = 256 * 1024
PIECE_BYTES = 4 * 1024 * 1024  # a keyed split is decoded and handed to Spark in pieces of about this size


# --- stream bytes -----------------------------------------------------------------------

def stream_location(base: Location, handle: StreamHandle) -> Location | None:
    """Where a stream's bytes lie (None for inline streams)."""
    if isinstance(handle, InlineStream):
        return None
    if isinstance(handle, RelativeFile):
        return check_reference(base, handle.relative_path)
    path = handle.path
    if path.startswith("file:") and not path.startswith("file://"):
        path = "/" + path[len("file:"):].lstrip("/")
    return check_reference(base, path)


def check_reference(base: Location, reference: str) -> Location:
    """Every file a Flink `_metadata` names passes here, through the project's one
    reference check (:func:`statectl.statefmt.resolve.resolve_reference`).

    A file lies inside the savepoint; a retained checkpoint (``.../<job>/chk-N``)
    may also reach its job's ``shared/`` and ``taskowned/`` folders, where Flink
    keeps the files checkpoints share (absolute handles); a shallow copy statectl
    derived may reach the savepoints of its lineage (`lineage.py`). Nothing else.
    """
    return resolve_reference(base, reference, [*checkpoint_roots(base), *_LINEAGE_ROOTS.get(base.uri, ())],
                             where=f"{base.child(METADATA)}: file handle")


# Folders of each opened savepoint's lineage (checked when its lineage file was read), by location:
# set by open_flink_savepoint, and from the split in a Spark task (a task sees no lineage file).
_LINEAGE_ROOTS: dict[str, tuple[str, ...]] = {}


def _register_roots(base: Location, roots: tuple[str, ...]) -> None:
    if roots:
        _LINEAGE_ROOTS[base.uri] = roots
    else:
        _LINEAGE_ROOTS.pop(base.uri, None)


def split_base(split: "FlinkSplit") -> Location:
    """The location a split's handles resolve against, with the lineage roots it may reach."""
    base = Location.of(split.savepoint)
    _register_roots(base, split.roots)
    return base


def stream_name(base: Location, handle: StreamHandle) -> str:
    if isinstance(handle, InlineStream):
        return f"{base.child(METADATA)} (inline stream {handle.name.rsplit('/', 1)[-1]})"
    return str(stream_location(base, handle))


def read_stream(base: Location, handle: StreamHandle) -> bytes:
    """All bytes of a stream; a missing or short file is one error naming it."""
    return read_range(base, handle, 0, handle.size)


def read_range(base: Location, handle: StreamHandle, start: int, end: int) -> bytes:
    """Bytes [start, end) of a stream, after checking its file is there with its recorded size."""
    if isinstance(handle, InlineStream):
        return handle.data[start:end]
    loc = stream_location(base, handle)
    info = loc.info()
    if info.type == pafs.FileType.NotFound:
        raise MissingFileError(f"{loc}: file is missing (referenced by {base.child(METADATA)})")
    if info.type != pafs.FileType.File:
        raise FlinkFormatError(f"{loc}: {_not_a_file(info)}, referenced by {base.child(METADATA)} "
                               f"as a stream of {handle.size} bytes")
    if isinstance(handle, SegmentFile):
        if info.size < handle.start + handle.size:
            raise FlinkFormatError(f"{loc}: segment [{handle.start}, {handle.start + handle.size}) "
                                   f"runs past the end of the file ({info.size} bytes)")
        start, end = start + handle.start, end + handle.start
    elif info.size != handle.size:
        raise FlinkFormatError(f"{loc}: {info.size} bytes, _metadata says {handle.size}")
    with loc.open_input_file() as f:
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:
        raise FlinkFormatError(f"{loc}: ends early: bytes [{start}, {end}) expected")
    return data


def _not_a_file(info: pafs.FileInfo) -> str:
    return "a directory, not a file" if info.type == pafs.FileType.Directory else "not a regular file"


def header_length(handle: KeyGroupsStream) -> int:
    """Where a keyed stream's data starts: its first key group's offset (the header precedes it)."""
    present = [o for o in handle.offsets if o > 0]
    return min(present) if present else handle.stream.size


# --- descriptions -----------------------------------------------------------------------

@dataclass(frozen=True)
class FlinkFile:
    path: str
    size: int


@dataclass(frozen=True)
class FlinkSplit:
    """One unit of work: a subtask stream, or a key-group range of one keyed stream.

    Picklable and self-contained (the handle carries inline bytes), so a Spark
    task can decode it without `_metadata`.
    """
    savepoint: str
    operator_id: str
    subtask: int
    max_parallelism: int
    handle: KeyGroupsStream | IncrementalRocksDB | OperatorStream
    key_groups: tuple[int, int] | None = None  # inclusive range, keyed splits only
    roots: tuple[str, ...] = ()  # folders of the savepoint's lineage its handles may reach

    @property
    def kind(self) -> str:
        return "operator" if isinstance(self.handle, OperatorStream) else "keyed"


@dataclass(frozen=True)
class FlinkStateInfo:
    name: str
    kind: str  # value, list, map, reducing, aggregating, timers, list (operator), union, broadcast
    serializer: str
    type: FlinkType
    arrow_type: pa.DataType
    ttl: bool
    size: int  # bytes of the streams and files that hold this state


@dataclass(frozen=True)
class FlinkUnreadable:
    """A part of an operator whose stream header cannot be parsed (see `model.UnreadablePart`)."""
    part: str
    reason: str
    files: list[FlinkFile]
    damaged: bool = True  # False: not broken, only not decodable here (an unknown serializer)


@dataclass
class FlinkOperatorInfo:
    uid: str | None
    operator_id: str
    name: str | None
    parallelism: int
    max_parallelism: int
    key_type: FlinkType | None
    states: list[FlinkStateInfo]
    files: list[FlinkFile]
    keyed_splits: list[FlinkSplit]
    operator_splits: list[FlinkSplit]
    keyed_header: KeyedHeader | None = None
    operator_states: dict[str, StateMeta] = field(default_factory=dict)
    unreadable: dict[str, "FlinkUnreadable"] = field(default_factory=dict)  # by part

    @property
    def label(self) -> str:
        return self.uid or self.operator_id

    @cached_property
    def keyed_schema(self) -> pa.Schema | None:
        h = self.keyed_header
        return None if h is None else TB.keyed_schema(h.key, h.states)

    @cached_property
    def timers_schema(self) -> pa.Schema | None:
        h = self.keyed_header
        return None if h is None or not TB.timer_states(h.states) else TB.timers_schema(h.key, h.states)

    def keyed_splits_holding(self, key_groups) -> list["FlinkSplit"]:
        """The keyed splits holding any of *key_groups* (all of them for None)."""
        if key_groups is None:
            return list(self.keyed_splits)
        return [s for s in self.keyed_splits if any(s.key_groups[0] <= g <= s.key_groups[1] for g in key_groups)]

    def table_schema(self, table: str) -> pa.Schema:
        """The Arrow schema of ``keyed``, ``timers`` (no timer service: the timers' columns,
        empty) or an operator state's table."""
        if table == "keyed":
            return self.keyed_schema
        if table == "timers":
            return self.timers_schema or TB.timers_schema(self.key_type, ())
        meta = self.operator_states[table]
        return TB.broadcast_schema(meta) if meta.kind == "broadcast" else TB.operator_list_schema(meta)

    @property
    def has_keyed_state(self) -> bool:
        return self.keyed_header is not None and bool(TB.keyed_states(self.keyed_header.states))


@dataclass
class FlinkSavepoint:
    location: Location
    metadata: FlinkMetadata
    operators: list[FlinkOperatorInfo]
    savepoint_id: str = ""  # lineage.flink_savepoint_id of its _metadata
    lineage: tuple[LineageEntry, ...] = ()  # the savepoints a shallow copy references

    def operator(self, uid_or_id: str) -> FlinkOperatorInfo:
        for op in self.operators:
            if uid_or_id in (op.uid, op.operator_id):
                return op
        raise UnknownOperatorError(f"{self.location}: no operator with uid or id {uid_or_id!r}")


def is_flink_savepoint(location) -> bool:
    loc = Location.of(location)
    meta = loc.child(METADATA) if loc.is_dir() else loc
    if not meta.exists():
        return False
    with meta.open_input_file() as f:
        return is_flink_metadata(f.read(4))


def open_flink_savepoint(location) -> FlinkSavepoint:
    loc = Location.of(location)
    if loc.name == METADATA and not loc.is_dir():
        loc = Location.of(loc.uri.rsplit("/", 1)[0])
    meta_loc = loc.child(METADATA)
    if not meta_loc.exists():
        raise NotASavepointError(f"{loc}: not a savepoint (no {METADATA} file)")
    data = meta_loc.read_bytes()
    metadata = parse_metadata(data, str(meta_loc))
    savepoint_id = flink_savepoint_id(data)
    lineage = read_lineage(loc, savepoint_id)
    check_present(loc, lineage)
    roots = tuple(r.uri for _, r in lineage_roots(lineage))
    _register_roots(loc, roots)
    return FlinkSavepoint(loc, metadata, [_describe(loc, op, roots) for op in metadata.operators],
                          savepoint_id, lineage)


def _keyed_header_stream(handle) -> StreamHandle:
    return handle.stream if isinstance(handle, KeyGroupsStream) else handle.meta


def _describe(base: Location, op: FlinkOperator, roots: tuple[str, ...] = ()) -> FlinkOperatorInfo:
    """An operator's states, files and splits. Raw keyed and raw operator state (bytes in
    a format of the user's own code) are not described."""
    files: dict[str, int] = {}
    keyed_header: KeyedHeader | None = None
    keyed_splits: list[FlinkSplit] = []
    operator_splits: list[FlinkSplit] = []
    op_states: dict[str, StateMeta] = {}
    keyed_bytes = 0
    op_bytes: dict[str, int] = {}
    unreadable: dict[str, StatectlError] = {}  # part (KEYED_PART or an operator state) -> why
    unreadable_files: dict[str, dict[str, int]] = {}
    keyed_files: dict[str, int] = {}
    for sub in op.subtasks:
        handle = sub.managed_keyed
        if handle is not None:
            stream = _keyed_header_stream(handle)
            if stream is None:
                raise FlinkFormatError(f"{base.child(METADATA)}: operator {op.label} subtask {sub.index}: "
                                       "keyed state without a stream")
            keyed_files.update(_handle_files(base, handle))
            keyed_bytes += sum(s.size for s in _handle_streams(handle))  # inline streams too
            try:
                check_keyed_handle(handle, op.max_parallelism, f"{base.child(METADATA)}: operator {op.label} "
                                   f"subtask {sub.index}")
                header = _read_keyed_header(base, handle, stream)
                keyed_header = keyed_header or header
                keyed_splits += _keyed_splits(base, op, sub.index, handle, roots)
            except (UnsupportedFlinkFeature, FlinkFormatError, MissingFileError) as e:
                unreadable.setdefault(KEYED_PART, e)
        for oh in sub.managed_operator:
            header = _read_operator_header(base, oh, f"{base.child(METADATA)}: operator {op.label} "
                                                     f"subtask {sub.index}")
            for s in header.states:
                op_states.setdefault(s.name, s)
                op_bytes[s.name] = op_bytes.get(s.name, 0) + oh.stream.size
            stream_files = {} if isinstance(oh.stream, InlineStream) else \
                {str(stream_location(base, oh.stream)): oh.stream.size}
            lost = [st.name for st in oh.states if st.name not in {s.name for s in header.states}]
            for name in lost:
                unreadable.setdefault(name, header.failure or FlinkFormatError(
                    f"{stream_name(base, oh.stream)}: the stream's header does not describe it"))
                unreadable_files.setdefault(name, {}).update(stream_files)
            if len(lost) < len(oh.states) or not oh.states:
                files.update(stream_files)
                operator_splits.append(FlinkSplit(str(base), op.operator_id, sub.index, op.max_parallelism, oh,
                                                  roots=roots))
    if KEYED_PART in unreadable:  # one subtask's header unreadable: the whole keyed part is
        keyed_header, keyed_splits = None, []
        unreadable_files[KEYED_PART] = keyed_files
    else:
        files.update(keyed_files)
    for name in unreadable:
        op_states.pop(name, None)
    states = []
    if keyed_header is not None:
        for s in keyed_header.states:
            states.append(FlinkStateInfo(s.name, s.kind, s.serializer, s.value, TB.state_arrow_type(s),
                                         s.ttl, keyed_bytes))
    for s in op_states.values():
        arrow = s.value.arrow() if s.kind != "broadcast" else pa.map_(s.user_key.arrow(), s.value.arrow())
        states.append(FlinkStateInfo(s.name, s.kind, s.serializer, s.value, arrow, False, op_bytes[s.name]))
    return FlinkOperatorInfo(
        op.uid, op.operator_id, op.name, op.parallelism, op.max_parallelism,
        keyed_header.key if keyed_header else None, states,
        [FlinkFile(p, s) for p, s in sorted(files.items())], keyed_splits, operator_splits,
        keyed_header, op_states,
        {part: FlinkUnreadable(part, str(why), [FlinkFile(p, s) for p, s in sorted(unreadable_files.get(part, {}).items())],
                               damaged=not isinstance(why, UnsupportedFlinkFeature))
         for part, why in unreadable.items()})


def _read_operator_header(base: Location, oh: OperatorStream, context: str) -> OperatorHeader:
    """An operator stream's header; an unreadable one describes no state (and says why)."""
    offsets = [o for st in oh.states for o in st.offsets]
    try:
        check_operator_handle(oh, context)
        data = read_range(base, oh.stream, 0, min(offsets) if offsets else oh.stream.size)
    except (FlinkFormatError, MissingFileError) as e:
        return OperatorHeader(0, False, (), 0, failure=e)
    return read_operator_header(data, stream_name(base, oh.stream))


def check_keyed_handle(handle, max_parallelism: int, context: str) -> None:
    """A keyed handle's key-group range within the operator's max parallelism and, for a
    keyed stream, every key-group offset within the stream and in order (0 = empty in a
    canonical stream): checked before a byte is read or allocated."""
    count = len(handle.offsets) if isinstance(handle, KeyGroupsStream) else handle.count
    if handle.start < 0 or count < 0 or handle.start + count > max_parallelism:
        raise FlinkFormatError(f"{context}: key groups {handle.start} to {handle.start + count - 1} lie outside "
                               f"0 to {max_parallelism - 1}")
    if not isinstance(handle, KeyGroupsStream) or handle.stream is None:
        return
    size, previous = handle.stream.size, -1
    for kg, offset in zip(handle.key_groups, handle.offsets):
        if offset == 0 and handle.layout == "canonical":
            continue
        if not 0 < offset <= size if handle.layout == "canonical" else not 0 <= offset <= size:
            raise FlinkFormatError(f"{context}: key group {kg}'s offset {offset} lies outside its stream "
                                   f"of {size} bytes")
        if offset < previous:
            raise FlinkFormatError(f"{context}: key group {kg}'s offset {offset} comes before the previous "
                                   f"key group's ({previous})")
        previous = offset


def check_operator_handle(oh: OperatorStream, context: str) -> None:
    """Every operator state element offset within its stream."""
    size = oh.stream.size
    for st in oh.states:
        for offset in st.offsets:
            if not 0 <= offset < size:
                raise FlinkFormatError(f"{context}: operator state {st.name!r}: offset {offset} lies outside "
                                       f"its stream of {size} bytes")


def _read_keyed_header(base: Location, handle, stream: StreamHandle) -> KeyedHeader:
    if not isinstance(handle, KeyGroupsStream):
        return read_keyed_header(read_stream(base, stream), stream_name(base, stream))
    length = header_length(handle)
    header = read_keyed_header(read_range(base, stream, 0, length), stream_name(base, stream))
    if header.length != length:  # bytes between the header and the first key group belong to nothing
        raise FlinkFormatError(f"{stream_name(base, stream)}: the header ends at offset {header.length}, "
                               f"the first key group starts at {length}")
    return header


def _handle_streams(handle) -> list[StreamHandle]:
    return [handle.stream] if isinstance(handle, KeyGroupsStream) else \
        [handle.meta] + [s for _, s in handle.files]


def _handle_files(base: Location, handle) -> list[tuple[str, int]]:
    out = []
    for s in _handle_streams(handle):
        if isinstance(s, InlineStream):
            continue
        out.append((str(stream_location(base, s)), s.size))
    return out


def _keyed_splits(base: Location, op: FlinkOperator, subtask: int, handle, roots: tuple[str, ...]
                  ) -> list[FlinkSplit]:
    make = lambda rng: FlinkSplit(str(base), op.operator_id, subtask, op.max_parallelism, handle, rng,  # noqa: E731
                                  roots)
    if isinstance(handle, IncrementalRocksDB):
        return [make((handle.start, handle.start + handle.count - 1))] if handle.count else []
    return [make(r) for r in _ranges(_blocks(handle, handle.stream.size), SPLIT_BYTES)]


def _ranges(blocks: list[tuple[int, int, int]], size_limit: int) -> list[tuple[int, int]]:
    """Inclusive key-group ranges of about *size_limit* bytes of stream each, covering *blocks*."""
    if not blocks:
        return []
    ranges, lo, size = [], blocks[0][0], 0
    for kg, start, end in blocks:
        if size and size + (end - start) > size_limit:
            ranges.append((lo, kg - 1))
            lo, size = kg, 0
        size += end - start
    ranges.append((lo, blocks[-1][0]))
    return ranges


def _pieces(split: FlinkSplit) -> list[FlinkSplit]:
    """A keyed split as key-group ranges of about :data:`PIECE_BYTES` (of stream, or of SST
    files), decoded and handed to Spark one after another: Spark's JVM converts one piece's
    rows while the Python worker decodes the next, and a worker holds one piece at a time."""
    handle = split.handle
    if isinstance(handle, IncrementalRocksDB):
        ranges = _native_ranges(handle, split.key_groups, PIECE_BYTES)
    elif isinstance(handle, KeyGroupsStream) and handle.layout == "canonical":
        ranges = _ranges(_blocks(handle, handle.stream.size, split.key_groups), PIECE_BYTES)
    else:
        return [split]
    return [replace(split, key_groups=r) for r in ranges] or [split]


def _native_ranges(handle: IncrementalRocksDB, key_groups: tuple[int, int], size_limit: int
                   ) -> list[tuple[int, int]]:
    """*key_groups* cut into equal ranges of about *size_limit* bytes of the snapshot's SST
    files (keys are spread evenly over key groups by Flink's hash)."""
    lo, hi = key_groups
    width = hi - lo + 1
    sst = sum(stream.size for local, stream in handle.files if local.endswith(".sst"))
    share = sst * width // max(handle.count, 1)
    n = max(1, min(width, -(-share // size_limit)))
    return [(lo + i * width // n, lo + (i + 1) * width // n - 1) for i in range(n)]


def _blocks(handle: KeyGroupsStream, size: int, key_groups: tuple[int, int] | None = None
            ) -> list[tuple[int, int, int]]:
    """(key group, start, end) of every non-empty key group of a keyed stream, in the range."""
    offsets = np.asarray(handle.offsets, dtype=np.int64)
    groups = np.arange(handle.start, handle.start + len(offsets))
    present = offsets > 0 if handle.layout == "canonical" else np.ones(len(offsets), bool)
    starts = offsets[present]
    g = groups[present]
    ends = np.append(starts[1:], size)
    if len(starts) and (np.diff(starts) < 0).any():
        raise FlinkFormatError("key-group offsets are not increasing")
    if key_groups is not None:
        keep = (g >= key_groups[0]) & (g <= key_groups[1])
        g, starts, ends = g[keep], starts[keep], ends[keep]
    return list(zip(g.tolist(), starts.tolist(), ends.tolist()))


# --- decoding splits -------------------------------------------------------------------

def decode_keyed_split(split: FlinkSplit, key_groups: Iterable[int] | None = None, timers: bool | None = None
                       ) -> Iterator[tuple[KeyedHeader, dict[str, StateRows]]]:
    """Every keyed state's rows in a split (or only in *key_groups*, a key filter's groups),
    piece by piece (:func:`_pieces`).

    *timers*: True for the timer states only, False for the others, None for all
    (heap-native streams are walked whole either way: they have no entry lengths).
    """
    wanted = None if key_groups is None else set(key_groups)
    pieces = _pieces(split)
    if isinstance(split.handle, IncrementalRocksDB):
        yield from _decode_rocksdb(split, [p.key_groups for p in pieces], wanted, timers)
        return
    for piece in pieces:
        yield _decode_stream(piece, wanted, timers)


def _decode_stream(split: FlinkSplit, wanted: set[int] | None, timers: bool | None
                   ) -> tuple[KeyedHeader, dict[str, StateRows]]:
    """The rows of a keyed stream's split (a canonical or heap-native stream)."""
    base = split_base(split)
    handle = split.handle
    stream = handle.stream
    source = stream_name(base, stream)
    header = read_keyed_header(read_range(base, stream, 0, header_length(handle)), source)
    blocks = _blocks(handle, stream.size, split.key_groups)
    if wanted is not None:
        blocks = [b for b in blocks if b[0] in wanted]
    start = blocks[0][1] if blocks else 0
    data = read_range(base, stream, start, blocks[-1][2] if blocks else 0)  # only this split's key groups
    blocks = [(kg, s - start, e - start) for kg, s, e in blocks]
    if header.compressed:
        data, blocks = _decompress_blocks(data, blocks, source, start)
        start = 0
    buf = Buf(data, source, base=start)
    if handle.layout == "native":
        by_id = decode_heap_native(buf, header, blocks)
        return header, {header.states[i].name: rows for i, rows in by_id.items()}
    raw = scan_canonical(buf, header, blocks, prefix_bytes(split.max_parallelism))
    return header, {header.states[i].name: decode_canonical_state(header.states[i], header.key, r)
                    for i, r in raw.items() if _wanted(header.states[i], timers)}


def _wanted(meta: StateMeta, timers: bool | None) -> bool:
    return timers is None or (meta.kind == "timers") == timers


def _decompress_blocks(data: bytes, blocks, source: str, base: int):
    """Each key group of a compressed stream is its own framed-snappy stream."""
    from . import snappy
    out, new_blocks, at = [], [], 0
    for kg, start, end in blocks:
        plain = snappy.decompress_framed(data, start=start, end=end, name=f"{source} key group {kg}",
                                         base_offset=base)
        out.append(plain)
        new_blocks.append((kg, at, at + len(plain)))
        at += len(plain)
    return b"".join(out), new_blocks


def _decode_rocksdb(split: FlinkSplit, ranges: list[tuple[int, int]], wanted: set[int] | None,
                    timers: bool | None) -> Iterator[tuple[KeyedHeader, dict[str, StateRows]]]:
    """The rows of a native RocksDB snapshot's split, one key-group range of *ranges* after
    another, its files opened once."""
    base = split_base(split)
    handle: IncrementalRocksDB = split.handle
    source = stream_name(base, handle.meta)
    header = read_keyed_header(read_stream(base, handle.meta), source)
    prefix = prefix_bytes(split.max_parallelism)
    names = {m.name for m in header.states if _wanted(m, timers)}
    tmp = new_scratch_dir("flink")
    try:
        files = native_files(base, handle, tmp)
        for entries in _native_entries(files, tmp, names, split, [_narrowed(r, wanted) for r in ranges]):
            out = {}
            for meta in header.states:
                extents = entries.get(meta.name)
                if extents is None:
                    continue
                raw = raw_from_extents(*extents, prefix, f"{source} column family {meta.name}")
                if wanted is not None:
                    keep = np.isin(raw.key_groups, list(wanted))
                    raw = type(raw)(raw.buf, *(a[keep] for a in (raw.key_groups, raw.key_starts, raw.key_ends,
                                                                  raw.value_starts, raw.value_ends)))
                out[meta.name] = decode_canonical_state(meta, header.key, raw)
            yield header, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def native_files(base: Location, handle: IncrementalRocksDB, tmp: str) -> list[tuple[str, "Location | str"]]:
    """``(RocksDB local name, file)`` of every file of a native snapshot; inline and
    segment streams are written into *tmp* first. Missing files and wrong sizes are
    errors naming the file."""
    files = []
    for i, (local, stream) in enumerate(handle.files):
        if isinstance(stream, (InlineStream, SegmentFile)):
            path = os.path.join(tmp, f"{i}-{os.path.basename(local)}")
            with open(path, "wb") as f:
                f.write(read_stream(base, stream))
            files.append((local, path))
            continue
        loc = stream_location(base, stream)
        info = loc.info()
        if info.type == pafs.FileType.NotFound:
            raise MissingFileError(f"{loc}: file is missing (referenced by {base.child(METADATA)})")
        if info.type != pafs.FileType.File:
            raise FlinkFormatError(f"{loc}: {_not_a_file(info)}, referenced by {base.child(METADATA)}")
        size = info.size
        if size != stream.size:
            raise FlinkFormatError(f"{loc}: {size} bytes, _metadata says {stream.size}")
        files.append((local, loc))
    return files


def _narrowed(key_groups: tuple[int, int] | None, wanted: set[int] | None) -> tuple[int, int] | None:
    """The key-group range to read: the split's, cut down to the span of a key filter's
    groups (an empty range, first > last, when they do not meet)."""
    if not wanted:
        return key_groups
    lo, hi = min(wanted), max(wanted)
    return (lo, hi) if key_groups is None else (max(lo, key_groups[0]), min(hi, key_groups[1]))


def _native_entries(files, workdir: str, names: set[str], split: FlinkSplit,
                    ranges: list[tuple[int, int] | None]) -> Iterator[dict[str, tuple]]:
    """Per inclusive key-group range of *ranges* (None: all), the entries of the column
    families *names* of one native RocksDB snapshot, as ``(data, key starts, key ends,
    value starts, value ends)``: read from the SST files directly (`native_sst`), or through
    rocksdict, for the ranges not yet read, once a file uses a table feature the direct
    reader does not decode."""
    from .native_sst import SstSnapshot, UnsupportedSstFeature
    from .rocksdb_native import open_rocksdb_snapshot

    ranges = [r for r in ranges if r is None or r[0] <= r[1]]
    done = 0
    try:
        with SstSnapshot(files, f"of operator {split.operator_id} subtask {split.subtask}") as db:
            for r in ranges:
                kw = dict(key_groups=r, max_parallelism=split.max_parallelism)
                found = {cf: db.live_entries(cf, **kw) for cf in db.column_families if cf in names}
                yield {cf: (e.data, e.key_starts, e.key_ends, e.value_starts, e.value_ends)
                       for cf, e in found.items() if e is not None}
                done += 1
        return
    except UnsupportedSstFeature:
        pass
    rest = ranges[done:]
    if not rest:
        return
    kw = dict(key_groups=None if rest[0] is None else (rest[0][0], rest[-1][1]),
              max_parallelism=split.max_parallelism)
    out = {}
    with open_rocksdb_snapshot(files, workdir=workdir) as db:
        for cf in db.column_families:
            chunks = list(db.interleaved(cf, **kw)) if cf in names else []
            if chunks:
                lengths = np.concatenate([n for _, n in chunks])
                offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
                np.cumsum(lengths, out=offsets[1:])
                out[cf] = (b"".join(d for d, _ in chunks), offsets[0:-1:2], offsets[1::2], offsets[1::2],
                           offsets[2::2])
    yield out


def read_split(split: FlinkSplit, table: str = "keyed", key_groups: Iterable[int] | None = None,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The record batches of *table* in one split.

    *table*: ``keyed`` or ``timers`` for keyed splits; an operator state's name
    for operator splits. Keyed splits are bounded by key-group ranges of about
    :data:`SPLIT_BYTES` of stream.
    """
    with _decoding(split):
        yield from _read_split(split, table, key_groups, batch_rows)


DATA_ERRORS = (ValueError, OverflowError, IndexError, KeyError, struct.error, MemoryError, pa.ArrowException)


@contextlib.contextmanager
def _decoding(split: FlinkSplit):
    """Bytes that break a decoder's assumptions in a way its checks did not name end in one
    FlinkFormatError naming the split, never in a Python exception (from a Spark task too)."""
    try:
        yield
    except DATA_ERRORS as e:
        where = f"{split.savepoint}: operator {split.operator_id} subtask {split.subtask}"
        if split.key_groups is not None:
            where += f" key groups {split.key_groups[0]}-{split.key_groups[1]}"
        raise FlinkFormatError(f"{where}: the state cannot be decoded ({type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else 'no detail'})") from None


def _read_split(split: FlinkSplit, table: str, key_groups, batch_rows: int) -> Iterator[pa.RecordBatch]:
    if split.kind == "operator":
        yield from _operator_batches(split, table, batch_rows)
        return
    if table not in ("keyed", "timers"):
        raise StatectlError(f"unknown keyed table {table!r} (keyed or timers)")
    base = split_base(split)
    source = f"{base} operator {split.operator_id} subtask {split.subtask}"
    for header, rows in decode_keyed_split(split, key_groups, timers=table == "timers"):
        if table == "keyed":
            schema = TB.keyed_schema(header.key, header.states)
            t = TB.keyed_table(header.key, header.states, rows, schema, source)
        else:
            schema = TB.timers_schema(header.key, header.states)
            t = TB.timers_table(header.key, header.states, rows, schema, source)
        yield from t.to_batches(max_chunksize=batch_rows)


def _operator_batches(split: FlinkSplit, state: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    base = split_base(split)
    handle: OperatorStream = split.handle
    info = next((s for s in handle.states if s.name == state), None)
    if info is None:
        return
    data = read_stream(base, handle.stream)
    source = stream_name(base, handle.stream)
    header = read_operator_header(data, source)
    meta = next((s for s in header.states if s.name == state), None)
    if meta is None and header.failure:
        raise UnsupportedFlinkFeature(f"operator {split.operator_id}: operator state {state!r} cannot be read: "
                                      f"{header.failure}")
    if meta is None:
        raise FlinkFormatError(f"{source}: state {state!r} is in _metadata but not in the stream's header")
    offsets = info.offsets
    if header.compressed:
        data, offsets = _decompress_elements(data, offsets, source)
    keys, values = decode_operator_state(meta, Buf(data, source), offsets)
    if keys is not None:
        t = pa.Table.from_arrays([keys, values], schema=TB.broadcast_schema(meta))
    else:
        subtask = pa.array(np.full(len(values), split.subtask, dtype=np.int32))
        t = pa.Table.from_arrays([subtask, values], schema=TB.operator_list_schema(meta))
    yield from t.to_batches(max_chunksize=batch_rows)


def _decompress_elements(data: bytes, offsets: tuple[int, ...], source: str) -> tuple[bytes, tuple[int, ...]]:
    """Compressed operator state: each offset starts the snappy chunks of one element."""
    from . import snappy
    out, new_offsets, at = [], [], 0
    ends = list(offsets[1:]) + [len(data)]
    for start, end in zip(offsets, ends):
        plain = snappy.decompress_framed(data, start=start, end=end, identifier=False, name=source)
        out.append(plain)
        new_offsets.append(at)
        at += len(plain)
    return b"".join(out), tuple(new_offsets)


# --- whole tables (for tests and small savepoints) --------------------------------------

def keyed_table(op: FlinkOperatorInfo, key_groups=None) -> pa.Table:
    _check_readable(op, KEYED_PART)
    return _collect(op.keyed_splits, "keyed", op.keyed_schema, key_groups)


def timers_table(op: FlinkOperatorInfo, key_groups=None) -> pa.Table:
    _check_readable(op, KEYED_PART)
    return _collect(op.keyed_splits, "timers", op.timers_schema, key_groups)


def _check_readable(op: FlinkOperatorInfo, part: str) -> None:
    if part in op.unreadable:
        raise UnsupportedFlinkFeature(f"operator {op.label}: {part} cannot be read: {op.unreadable[part].reason}")


def operator_state_table(op: FlinkOperatorInfo, state: str) -> pa.Table:
    _check_readable(op, state)
    meta = op.operator_states[state]
    if meta.kind == "broadcast":
        splits = op.operator_splits[:1]  # identical on every subtask: one copy
        schema = TB.broadcast_schema(meta)
    else:
        splits = op.operator_splits
        schema = TB.operator_list_schema(meta)
    batches = [b for s in splits for b in read_split(s, state)]
    return pa.Table.from_batches(batches, schema=schema)


def _collect(splits, table, schema, key_groups) -> pa.Table:
    if schema is None:
        raise StatectlError(f"no {table} state")
    batches = [b for s in splits for b in read_split(s, table, key_groups)]
    out = [pa.Table.from_batches([b]).cast(schema) if b.schema != schema else pa.Table.from_batches([b])
           for b in batches]
    return pa.concat_tables(out) if out else schema.empty_table()
