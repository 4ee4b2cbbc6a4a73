"""A Flink savepoint described without a JVM: its operators, states, files and splits.

:func:`describe_operator` reads each stream's header once and describes every operator
and state (for `info`), with the :class:`FlinkSplit` units of work that
`savepoint.read_split` decodes into Arrow (one Spark task per split). Every offset a
handle gives is checked against its stream before a byte is read. Nothing here reads
state data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, MissingFileError, StatectlError, UnknownOperatorError, UnsupportedFlinkFeature
from ..fs import Location
from ..model import KEYED_PART, LineageEntry
from ..vocabulary import KeyedTable
from . import tables as TB
from .handles import IncrementalRocksDB, InlineStream, KeyGroupsStream, OperatorStream, StreamHandle, keyed_streams
from .kryo.context import KryoSetting, current as current_kryo_setting
from .headers import KeyedHeader, OperatorHeader, StateMeta, read_keyed_header, read_operator_header
from .metadata import FlinkMetadata, FlinkOperator
from .streamio import (METADATA, header_length, lineage_roots_of, read_range, read_stream, stream_location,
                       stream_name)
from .types import FlinkType

SPLIT_BYTES = 64 * 1024 * 1024  # a canonical or heap stream is cut into key-group ranges of about this size


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
    handle: KeyGroupsStream | IncrementalRocksDB | OperatorStream | StreamHandle  # a stream: coordinator state
    key_groups: tuple[int, int] | None = None  # inclusive range, keyed splits only
    roots: tuple[str, ...] = ()  # folders of the savepoint's lineage its handles may reach
    layouts: tuple[tuple[str, str], ...] = ()  # connector states: (state, layout), `connectors.py`
    kryo: KryoSetting = field(default_factory=current_kryo_setting)  # to decode Kryo values where it runs

    @property
    def kind(self) -> str:
        if isinstance(self.handle, OperatorStream):
            return "operator"
        return "keyed" if isinstance(self.handle, (KeyGroupsStream, IncrementalRocksDB)) else "coordinator"


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
    connector_layouts: dict[str, str] = field(default_factory=dict)  # connector states' layouts
    connector_schemas: dict[str, pa.Schema] = field(default_factory=dict)  # and their tables' schemas
    coordinator: object = None  # its coordinator state as a table, `coordinator.CoordinatorPart`

    @property
    def label(self) -> str:
        return self.uid or self.operator_id

    @property
    def keyed_layout(self) -> str | None:
        """How its keyed state is stored: ``rocksdb-native`` (a RocksDB snapshot of Flink's
        RocksDB or ForSt backend), ``heap-native`` (the heap backend's native streams),
        ``canonical`` (key-group streams any backend restores); None without keyed state."""
        handles = [s.handle for s in self.keyed_splits]
        if any(isinstance(h, IncrementalRocksDB) for h in handles):
            return "rocksdb-native"
        if any(isinstance(h, KeyGroupsStream) and h.layout == "native" for h in handles):
            return "heap-native"
        return "canonical" if handles else None

    @property
    def keyed_native(self) -> bool:
        """Whether its keyed state is a native RocksDB snapshot (Flink's RocksDB or ForSt backend)."""
        return self.keyed_layout == "rocksdb-native"

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
        if table == KeyedTable.KEYED:
            return self.keyed_schema
        if table == KeyedTable.TIMERS:
            return self.timers_schema or TB.timers_schema(self.key_type, ())
        if table in self.connector_schemas:  # set by `connectors.attach`
            return self.connector_schemas[table]
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



def _keyed_header_stream(handle) -> StreamHandle:
    return handle.stream if isinstance(handle, KeyGroupsStream) else handle.meta


@dataclass
class _Gathered:
    """What the subtasks of one operator hold, gathered subtask by subtask."""
    files: dict[str, int] = field(default_factory=dict)
    keyed_header: KeyedHeader | None = None
    keyed_splits: list[FlinkSplit] = field(default_factory=list)
    operator_splits: list[FlinkSplit] = field(default_factory=list)
    op_states: dict[str, StateMeta] = field(default_factory=dict)
    keyed_bytes: int = 0
    op_bytes: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, StatectlError] = field(default_factory=dict)  # part (KEYED_PART or a state) -> why
    unreadable_files: dict[str, dict[str, int]] = field(default_factory=dict)
    keyed_files: dict[str, int] = field(default_factory=dict)
    headers: dict[tuple, KeyedHeader | OperatorHeader] = field(default_factory=dict)  # see header()

    def header(self, parse, data: bytes, source: str):
        """*data* parsed by *parse* (`read_keyed_header` or `read_operator_header`), once per
        operator: its subtasks' streams start with the same header bytes, and only the first
        subtask's parsed header is kept (the others are checked to parse, which the same bytes
        do alike), so parsing each distinct header once halves `info` on a Flink savepoint of
        parallelism 2. A header with a failure (naming its stream) is not shared."""
        key = (parse, data)
        header = self.headers.get(key)
        if header is None:
            header = parse(data, source)
            if getattr(header, "failure", None) is None:
                self.headers[key] = header
        return header


def describe_operator(base: Location, op: FlinkOperator) -> FlinkOperatorInfo:
    """An operator's states, files and splits. Raw keyed and raw operator state (bytes in
    a format of the user's own code) are not described."""
    found = _Gathered()
    for sub in op.subtasks:
        if sub.managed_keyed is not None:
            _gather_keyed(found, base, op, sub.index, sub.managed_keyed)
        for oh in sub.managed_operator:
            _gather_operator_stream(found, base, op, sub.index, oh)
    if KEYED_PART in found.unreadable:  # one subtask's header unreadable: the whole keyed part is
        found.keyed_header, found.keyed_splits = None, []
        found.unreadable_files[KEYED_PART] = found.keyed_files
    else:
        found.files.update(found.keyed_files)
    for name in found.unreadable:
        found.op_states.pop(name, None)
    header = found.keyed_header
    return FlinkOperatorInfo(
        op.uid, op.operator_id, op.name, op.parallelism, op.max_parallelism,
        header.key if header else None, _states(found),
        _flink_files(found.files), found.keyed_splits, found.operator_splits, header, found.op_states,
        {part: FlinkUnreadable(part, str(why), _flink_files(found.unreadable_files.get(part, {})),
                               damaged=not isinstance(why, UnsupportedFlinkFeature))
         for part, why in found.unreadable.items()})


def _flink_files(files: dict[str, int]) -> list[FlinkFile]:
    return [FlinkFile(p, s) for p, s in sorted(files.items())]


def _gather_keyed(found: _Gathered, base: Location, op: FlinkOperator, subtask: int, handle) -> None:
    """One subtask's keyed handle: its files and bytes; its header and splits, or why not."""
    stream = _keyed_header_stream(handle)
    context = f"{base.child(METADATA)}: operator {op.label} subtask {subtask}"
    if stream is None:
        raise FlinkFormatError(f"{context}: keyed state without a stream")
    found.keyed_files.update(_handle_files(base, handle))
    found.keyed_bytes += sum(s.size for s in keyed_streams(handle))  # inline streams too
    try:
        check_keyed_handle(handle, op.max_parallelism, context)
        header = _read_keyed_header(found, base, handle, stream)
        found.keyed_header = found.keyed_header or header
        found.keyed_splits += _keyed_splits(base, op, subtask, handle)
    except (UnsupportedFlinkFeature, FlinkFormatError, MissingFileError) as e:
        found.unreadable.setdefault(KEYED_PART, e)


def _gather_operator_stream(found: _Gathered, base: Location, op: FlinkOperator, subtask: int,
                            oh: OperatorStream) -> None:
    """One subtask's operator state stream: its states, or why a state cannot be read."""
    header = _read_operator_header(found, base, oh, f"{base.child(METADATA)}: operator {op.label} subtask {subtask}")
    for s in header.states:
        found.op_states.setdefault(s.name, s)
        found.op_bytes[s.name] = found.op_bytes.get(s.name, 0) + oh.stream.size
    stream_files = {} if isinstance(oh.stream, InlineStream) else \
        {str(stream_location(base, oh.stream)): oh.stream.size}
    lost = [st.name for st in oh.states if st.name not in {s.name for s in header.states}]
    for name in lost:
        found.unreadable.setdefault(name, header.failure or FlinkFormatError(
            f"{stream_name(base, oh.stream)}: the stream's header does not describe it"))
        found.unreadable_files.setdefault(name, {}).update(stream_files)
    if len(lost) < len(oh.states) or not oh.states:
        found.files.update(stream_files)
        found.operator_splits.append(FlinkSplit(str(base), op.operator_id, subtask, op.max_parallelism, oh,
                                                roots=lineage_roots_of(base)))


def _states(found: _Gathered) -> list[FlinkStateInfo]:
    states = []
    if found.keyed_header is not None:
        for s in found.keyed_header.states:
            states.append(FlinkStateInfo(s.name, s.kind, s.serializer, s.value, TB.state_arrow_type(s),
                                         s.ttl, found.keyed_bytes))
    for s in found.op_states.values():
        arrow = s.value.arrow() if s.kind != "broadcast" else pa.map_(s.user_key.arrow(), s.value.arrow())
        states.append(FlinkStateInfo(s.name, s.kind, s.serializer, s.value, arrow, False, found.op_bytes[s.name]))
    return states


def _read_operator_header(found: _Gathered, base: Location, oh: OperatorStream, context: str) -> OperatorHeader:
    """An operator stream's header; an unreadable one describes no state (and says why)."""
    offsets = [o for st in oh.states for o in st.offsets]
    try:
        check_operator_handle(oh, context)
        data = read_range(base, oh.stream, 0, min(offsets) if offsets else oh.stream.size)
    except (FlinkFormatError, MissingFileError) as e:
        return OperatorHeader(0, False, (), 0, failure=e)
    return found.header(read_operator_header, data, stream_name(base, oh.stream))


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


def _read_keyed_header(found: _Gathered, base: Location, handle, stream: StreamHandle) -> KeyedHeader:
    if not isinstance(handle, KeyGroupsStream):
        return found.header(read_keyed_header, read_stream(base, stream), stream_name(base, stream))
    length = header_length(handle)
    header = found.header(read_keyed_header, read_range(base, stream, 0, length), stream_name(base, stream))
    if header.length != length:  # bytes between the header and the first key group belong to nothing
        raise FlinkFormatError(f"{stream_name(base, stream)}: the header ends at offset {header.length}, "
                               f"the first key group starts at {length}")
    return header


def inline_bytes(op: FlinkOperatorInfo) -> int:
    """The bytes of *op*'s state held inline in `_metadata` (streams below Flink's
    ``state.storage.fs.memory-threshold``), each stream counted once."""
    handles = {id(s.handle): s.handle for s in op.keyed_splits + op.operator_splits}
    if op.coordinator is not None:
        handles[id(op.coordinator.split.handle)] = op.coordinator.split.handle
    streams = []
    for h in handles.values():
        streams += [h.stream] if isinstance(h, OperatorStream) else \
            [h] if not isinstance(h, (KeyGroupsStream, IncrementalRocksDB)) else keyed_streams(h)
    return sum(s.size for s in streams if isinstance(s, InlineStream))


def _handle_files(base: Location, handle) -> list[tuple[str, int]]:
    out = []
    for s in keyed_streams(handle):
        if isinstance(s, InlineStream):
            continue
        out.append((str(stream_location(base, s)), s.size))
    return out


def _keyed_splits(base: Location, op: FlinkOperator, subtask: int, handle) -> list[FlinkSplit]:
    make = lambda rng: FlinkSplit(str(base), op.operator_id, subtask, op.max_parallelism, handle, rng,  # noqa: E731
                                  lineage_roots_of(base))
    if isinstance(handle, IncrementalRocksDB):
        return [make((handle.start, handle.start + handle.count - 1))] if handle.count else []
    return [make(r) for r in key_group_ranges(key_group_blocks(handle, handle.stream.size), SPLIT_BYTES)]


def key_group_ranges(blocks: list[tuple[int, int, int]], size_limit: int) -> list[tuple[int, int]]:
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


def key_group_blocks(handle: KeyGroupsStream, size: int, key_groups: tuple[int, int] | None = None
            ) -> list[tuple[int, int, int]]:
    """(key group, start, end) of every non-empty key group of a keyed stream, in the range."""
    g, starts, ends = key_group_extents(handle, size, key_groups)
    return list(zip(g.tolist(), starts.tolist(), ends.tolist()))


def key_group_bytes(handle: KeyGroupsStream, key_groups: tuple[int, int] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(key groups, bytes of each in its stream) of a keyed stream's key groups present in the
    range, from the handle's offsets alone: exact, as stored (compressed if the stream is)."""
    g, starts, ends = key_group_extents(handle, handle.stream.size, key_groups)
    return g, ends - starts


def stream_share(handle: KeyGroupsStream, key_groups: tuple[int, int]) -> int:
    """The bytes of a keyed stream a split of *key_groups* is read from: its key groups' bytes,
    and the header (before the first key group) for the split holding the first; the
    shares of a stream's splits sum to its size."""
    g, starts, ends = key_group_extents(handle, handle.stream.size, key_groups)
    if not len(g):
        return 0
    present = [o for o in handle.offsets if o > 0] if handle.layout == "canonical" else list(handle.offsets)
    first = int(starts[0]) if not present or int(starts[0]) > min(present) else 0
    return int(ends[-1]) - first


def operator_state_bytes(handle: OperatorStream, name: str) -> int:
    """The bytes of operator state *name* in its subtask's stream: from its first element's
    offset to the next state's first element (or the stream's end); 0 without elements."""
    firsts = sorted(min(st.offsets) for st in handle.states if st.offsets)
    own = next((min(st.offsets) for st in handle.states if st.name == name and st.offsets), None)
    if own is None:
        return 0
    later = [o for o in firsts if o > own]
    return (later[0] if later else handle.stream.size) - own


def key_group_extents(handle: KeyGroupsStream, size: int, key_groups: tuple[int, int] | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key groups, starts, ends) as arrays: every non-empty key group of a keyed stream (in
    the range), where its bytes start and end in the stream of *size* bytes."""
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
    return g, starts, ends
