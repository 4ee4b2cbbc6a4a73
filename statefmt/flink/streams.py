"""Keyed and operator state streams to per-state Arrow columns.

One pass finds the extent of every entry (key and value offsets); the
columns are then decoded for all entries at once (:mod:`types`).

A keyed state comes out as :class:`StateRows`: per row its key group, the raw
bytes of key + namespace (the row identity shared by every state of the
operator), and the state's column. Three layouts feed it:

* canonical (handle 7) and native RocksDB: entries ``key-group prefix | key |
  namespace [| map user key]`` → value, grouped per state and key group;
* heap native (handles 3, 12): per key group every state as ``short id, int n,
  n × (namespace, key, value)``, values written by the whole state serializer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from ..jit import numba_started, walk_plainly
from ..vocabulary import KeyedTable, OperatorStateKind, StateKind
from .headers import KeyedHeader, StateMeta
from .list_layout import LIST_DELIMITER
from . import types as T
from .types import Buf
from .types.buffer import Extents
from .types.avro import damaged
from .types.base import DamagedValue
from .types.avro_composite import Avro
from .walk import TRAILING, UNKNOWN_STATE, walk_small

META_FOLLOWS = 0x80
END_OF_KEY_GROUP = 0xFFFF
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")


def prefix_bytes(max_parallelism: int) -> int:
    """Bytes of the key-group prefix of canonical and RocksDB keys."""
    return 1 if max_parallelism <= 128 else 2


@dataclass
class RawEntries:
    """Extents of one state's entries in *buf* (canonical layout); keys start after the prefix."""
    buf: Buf
    key_groups: np.ndarray
    key_starts: np.ndarray
    key_ends: np.ndarray
    value_starts: np.ndarray
    value_ends: np.ndarray


@dataclass
class StateRows:
    key_groups: np.ndarray  # int32
    keyns: Extents          # key bytes + namespace bytes
    values: pa.Array        # the state's column (timers: int64 timestamps)


# --- canonical -----------------------------------------------------------------------

def scan_canonical(buf: Buf, header: KeyedHeader, blocks: list[tuple[int, int, int]],
                   prefix: int) -> dict[int, RawEntries]:
    """Entries of every state in the key-group *blocks* ``(key group, start, end)`` of *buf*.

    The walk from entry to entry is compiled (:mod:`kernels`), or for a few key groups plain
    Python (:mod:`.walk`); it is checked against the block ends, and a stream that breaks off
    is one error naming the offset.
    """
    table = np.asarray(blocks, dtype=np.int64).reshape(-1, 3)
    args = (table, len(header.states), prefix, META_FOLLOWS, END_OF_KEY_GROUP)
    if walk_plainly(int((table[:, 2] - table[:, 1]).sum())):
        found, error = walk_small(buf.data, *args)
    else:
        from .kernels import walk_canonical

        found, error = walk_canonical(buf.arr, *args)
    if error is not None:
        code, b, at, state_id = (int(x) for x in error)
        key_group, end = int(table[b, 0]), int(table[b, 2])
        if code == UNKNOWN_STATE:
            raise FlinkFormatError(f"{buf.source}: unknown state id {state_id} in key group {key_group} "
                                   f"at offset {buf.base + at}")
        if code == TRAILING:
            raise FlinkFormatError(f"{buf.source}: key group {key_group} ends at offset {buf.base + at}, "
                                   f"{end - at} byte(s) before the next one starts")
        raise FlinkFormatError(f"{buf.source}: stream ends early in key group {key_group} "
                               f"at offset {buf.base + min(at, end)}")
    return {sid: RawEntries(buf, groups, key_starts, key_ends, key_ends + 4, value_ends)
            for sid, (groups, key_starts, key_ends, value_ends) in found.items()}


def as_i32(buf: Buf, starts: np.ndarray) -> np.ndarray:
    return T.as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)


def raw_from_interleaved(data: bytes, lengths: np.ndarray, prefix: int, source: str) -> RawEntries:
    """Entries given as one ``bytes`` of key, value, key, value, ... and the lengths of
    those parts (RocksDB), in the canonical layout."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return raw_from_extents(data, offsets[0:-1:2], offsets[1::2], offsets[1::2], offsets[2::2], prefix, source)


def raw_from_extents(data: bytes, key_starts: np.ndarray, key_ends: np.ndarray, value_starts: np.ndarray,
                     value_ends: np.ndarray, prefix: int, source: str) -> RawEntries:
    """Entries whose keys (with their key-group prefix) and values lie in *data* at the
    given extents (RocksDB), in the canonical layout."""
    buf = Buf(data, source)
    if len(key_starts) and (key_ends - key_starts).min() < prefix:
        raise FlinkFormatError(f"{source}: a key shorter than its key-group prefix")
    kg = np.zeros(len(key_starts), dtype=np.int64)
    for i in range(prefix):
        kg = (kg << 8) | buf.arr[key_starts + i]
    return RawEntries(buf, kg.astype(np.int32), key_starts + prefix, key_ends, value_starts, value_ends)


def _split_key(key: T.FlinkType, ns: T.FlinkType, buf: Buf, starts: np.ndarray) -> np.ndarray:
    """Where key + namespace end when a map user key follows them."""
    if key.width is not None and ns.width is not None:
        return starts + key.width + ns.width
    _, key_ends = key.column(buf, starts, None)
    _, ns_ends = ns.column(buf, key_ends, None)
    return ns_ends


class DamagedValueError(FlinkFormatError):
    """A value of one state that cannot be decoded, located: its state, key group and type."""

    def __init__(self, source: str, detail: str):
        super().__init__(f"{source}: {detail}")
        self.source, self.detail = source, detail


def _located(meta: StateMeta, key_groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, decode):
    """*decode()*, a damaged Avro value in it named by its state, key group and type."""
    try:
        return decode()
    except DamagedValue as e:
        holds = np.nonzero((starts <= e.offset) & (e.offset < ends))[0]
        group = f", key group {int(key_groups[holds[0]])}" if len(holds) else ""
        raise DamagedValueError(e.source, f"state {meta.name!r}{group} ({meta.value.describe()}): damaged "
                                f"value: {e.what} at offset {e.base + e.offset}") from None


def decode_canonical_state(meta: StateMeta, key: T.FlinkType, raw: RawEntries) -> StateRows:
    return _located(meta, raw.key_groups, raw.value_starts, raw.value_ends,
                    lambda: _decode_canonical_state(meta, key, raw))


def _decode_canonical_state(meta: StateMeta, key: T.FlinkType, raw: RawEntries) -> StateRows:
    buf = raw.buf
    if meta.kind == KeyedTable.TIMERS:
        ts = T.as_dtype(buf.gather(raw.key_starts, 8), ">i8").astype("<i8") ^ np.int64(T.LONG_MIN)
        return StateRows(raw.key_groups, Extents(buf, raw.key_starts + 8, raw.key_ends), pa.array(ts))
    ns = meta.namespace
    if meta.kind == StateKind.MAP:
        split = _split_key(key, ns, buf, raw.key_starts)
        keyns = buf.slices(raw.key_starts, split)
        user_keys, _ = meta.value.key.column(buf, split, raw.key_ends)
        values, ends = T.null_flagged(meta.value.value, buf, raw.value_starts, raw.value_ends)
        _whole(meta.value.value, buf, raw.value_starts, ends, raw.value_ends)
        return _group_map(raw.key_groups, keyns, user_keys, values, meta, buf.source)
    keyns = Extents(buf, raw.key_starts, raw.key_ends)
    if meta.kind == StateKind.LIST:
        values = _delimited(meta.value.element, buf, raw.value_starts, raw.value_ends)
    else:
        values, ends = meta.value.column(buf, raw.value_starts, raw.value_ends)
        _whole(meta.value, buf, raw.value_starts, ends, raw.value_ends)
    return StateRows(raw.key_groups, keyns, values)


def _whole(t: T.FlinkType, buf: Buf, starts: np.ndarray, ends: np.ndarray, value_ends: np.ndarray) -> None:
    """An Avro value fills its entry's bytes: any left over mean a damaged length inside it."""
    if isinstance(t, Avro) and len(ends) and (ends != value_ends).any():
        i = int(np.argmax(ends != value_ends))
        raise damaged(buf, f"it ends {int(value_ends[i] - ends[i])} byte(s) before its entry does", int(starts[i]))


def _group_map(key_groups, keyns, user_keys, values, meta: StateMeta, source: str) -> StateRows:
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(keyns)
    ids = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(ids, kind="stable")
    counts = np.bincount(ids, minlength=len(encoded.dictionary))
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    take = pa.array(order)
    maps = pa.MapArray.from_arrays(pa.array(offsets), user_keys.take(take), values.take(take))
    first = order[offsets[:-1]]
    return StateRows(key_groups[first], Extents.of(encoded.dictionary, source), maps)


def list_rounds(element: T.FlinkType, buf: Buf, starts: np.ndarray, ends: np.ndarray):
    """The elements of lists written as elements separated by ',' (RocksDB list state), the
    k-th of every list that has one in round k: per round the lists' indexes, where their
    elements start and end, and the elements decoded."""
    if not element.decodable:
        raise UnsupportedFlinkFeature(
            f"{buf.source}: list elements of {element.serializer} cannot be delimited")
    cursors = starts.copy()
    while True:
        active = np.nonzero(cursors < ends)[0]
        if not len(active):
            return
        at = cursors[active]
        values, e = element.column(buf, at, ends[active])
        more = e < ends[active]
        if more.any():
            bad = buf.arr[e[more]] != LIST_DELIMITER
            if bad.any():
                at_bad = int(e[more][bad][0])
                raise FlinkFormatError(f"{buf.source}: list element not followed by ',' at offset {buf.base + at_bad}")
        if (e > ends[active]).any():
            raise FlinkFormatError(f"{buf.source}: a list element runs past its value")
        cursors[active] = np.where(more, e + 1, e)
        yield active, at, e, values


def _delimited(element: T.FlinkType, buf: Buf, starts: np.ndarray, ends: np.ndarray) -> pa.ListArray:
    """Lists written as elements separated by ',' (RocksDB list state), all rows at once."""
    if isinstance(element, T.String) and numba_started():  # compiled code costs no start now
        found = _short_strings(buf, starts, ends)
        if found is not None:
            return found
    return _delimited_in_rounds(element, buf, starts, ends)


def _short_strings(buf: Buf, starts: np.ndarray, ends: np.ndarray) -> pa.ListArray | None:
    """:func:`_delimited` of lists of short ASCII strings, by a compiled pass (None: others)."""
    from .stringkernels import short_ascii_lists

    return short_ascii_lists(buf.arr, starts, ends)


def _delimited_in_rounds(element: T.FlinkType, buf: Buf, starts: np.ndarray, ends: np.ndarray) -> pa.ListArray:
    """:func:`_delimited` of any element type: the k-th element of every list in round k."""
    rounds = [(active, values) for active, _, _, values in list_rounds(element, buf, starts, ends)]
    counts = np.zeros(len(starts), dtype=np.int64)
    for active, _ in rounds:
        counts[active] += 1
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    perm = np.empty(int(offsets[-1]), dtype=np.int64)
    base = 0
    for k, (active, _) in enumerate(rounds):
        perm[offsets[active] + k] = base + np.arange(len(active))
        base += len(active)
    flat = pa.concat_arrays([v for _, v in rounds]).take(pa.array(perm)) if rounds \
        else pa.array([], element.arrow())
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat)


# --- heap native ----------------------------------------------------------------------

def decode_heap_native(buf: Buf, header: KeyedHeader, blocks: list[tuple[int, int, int]]
                       ) -> dict[int, StateRows]:
    """Every state of the key-group *blocks* of a heap-native stream.

    Entries carry no lengths, so one walk finds where each namespace, key and
    value starts (fixed-width parts are stepped over, others skipped by their
    type); the columns are then decoded with those offsets, all entries at once.
    """
    return {sid: _heap_state_rows(buf, header.states[sid], *marks)
            for sid, marks in _heap_entry_starts(buf, header, blocks).items()}


def _heap_entry_starts(buf: Buf, header: KeyedHeader, blocks: list[tuple[int, int, int]]
                       ) -> dict[int, tuple[list, list, list, list]]:
    """Per state id: its (key group, entry count) pairs, and where each entry's three parts
    start (a timer's timestamp, key, namespace; else namespace, key, value)."""
    data, source = buf.data, buf.source
    n_states = len(header.states)
    key_skip = header.key.skipper(buf)
    skips = []
    for meta in header.states:
        ns_skip = meta.namespace.skipper(buf) if meta.namespace is not None else None
        skips.append((ns_skip, None if meta.kind == KeyedTable.TIMERS else meta.value.skipper(buf)))
    marks: dict[int, tuple[list, list, list, list]] = {}
    for key_group, pos, end in blocks:
        try:
            stored = _I32.unpack_from(data, pos)[0]
            if stored != key_group:
                raise FlinkFormatError(f"{source}: key group {key_group} expected at offset "
                                       f"{buf.base + pos}, found {stored}")
            pos += 4
            for _ in range(n_states):
                sid = _U16.unpack_from(data, pos)[0]
                count = _I32.unpack_from(data, pos + 2)[0]
                if sid >= n_states or count < 0 or count > end - pos:
                    raise FlinkFormatError(f"{source}: bad state block in key group {key_group} "
                                           f"at offset {buf.base + pos} (state {sid}, {count} entries)")
                pos += 6
                if not count:
                    continue
                kgs, first, second, third = marks.setdefault(sid, ([], [], [], []))
                kgs.append((key_group, count))
                ns_skip, value_skip = skips[sid]
                if value_skip is None:  # a timer: timestamp, key, namespace
                    for _ in range(count):
                        first.append(pos)
                        pos = key_skip(pos + 8)
                        second.append(pos)
                        pos = ns_skip(pos)
                        third.append(pos)
                else:  # namespace, key, value
                    for _ in range(count):
                        first.append(pos)
                        pos = ns_skip(pos)
                        second.append(pos)
                        pos = key_skip(pos)
                        third.append(pos)
                        pos = value_skip(pos)
            if pos > end:
                raise IndexError
            if pos < end:  # every byte of a key group belongs to one of its entries
                raise FlinkFormatError(f"{source}: key group {key_group} ends at offset {buf.base + pos}, "
                                       f"{end - pos} byte(s) before the next one starts")
        except (IndexError, struct.error):
            raise FlinkFormatError(f"{source}: stream ends early in key group {key_group} "
                                   f"at offset {buf.base + min(pos, end)}") from None
    return marks


def _heap_state_rows(buf: Buf, meta: StateMeta, kgs: list, first: list, second: list, third: list
                     ) -> StateRows:
    """One state's rows, decoded from where its entries' parts start."""
    kg = np.repeat(*map(np.asarray, zip(*kgs))).astype(np.int32)
    a, b_, c = (np.asarray(x, dtype=np.int64) for x in (first, second, third))
    if meta.kind == KeyedTable.TIMERS:
        ts = T.as_dtype(buf.gather(a, 8), ">i8").astype("<i8") ^ np.int64(T.LONG_MIN)
        return StateRows(kg, Extents(buf, a + 8, c), pa.array(ts))
    # the row identity is key + namespace: here they come as namespace, key
    keyns = buf.slices(np.column_stack([b_, a]).ravel(), np.column_stack([c, b_]).ravel(), parts=2)
    ends = np.append(a[1:], len(buf.data)) if len(a) else a
    values, _ = _located(meta, kg, a, ends, lambda: meta.value.column(buf, c))
    return StateRows(kg, Extents.of(keyns, buf.source), values)


# --- operator state ---------------------------------------------------------------------

def decode_operator_state(meta: StateMeta, buf: Buf, offsets: tuple[int, ...]) -> tuple[pa.Array | None, pa.Array]:
    """(keys or None, values) of one operator state in one subtask's stream."""
    starts = np.asarray(offsets, dtype=np.int64)
    if meta.kind == OperatorStateKind.BROADCAST:
        if len(starts) != 1:
            raise FlinkFormatError(f"{buf.source}: broadcast state {meta.name!r} has {len(starts)} offsets, not 1")
        counts = T.collection_sizes(buf, starts)

        def one(cursors):
            k, e = meta.user_key.column(buf, cursors)
            v, e = meta.value.column(buf, e)
            return (k, v), e
        cols, _, _ = T.decode_rounds(one, buf, starts + 4, counts)
        if not cols:
            return pa.array([], meta.user_key.arrow()), pa.array([], meta.value.arrow())
        return cols[0], cols[1]
    limits = np.append(starts[1:], len(buf.data)) if len(starts) else starts
    values, _ = meta.value.column(buf, starts, limits)
    return None, values
