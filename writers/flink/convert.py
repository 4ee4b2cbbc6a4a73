"""A keyed stream's values rewritten by a new job's serializers: decoded with OLD's, conformed
(`conform.py`) and encoded with NEW's, every other byte of the stream kept.

For the conversions `statefmt.flink.compat` says rewrite values (a number or DECIMAL widened, a
column appended to a SQL row, Row or POJO fields, TTL on Flink 1.x) of a keyed state whose key,
namespace and map keys keep their bytes: the entries stay where they are in their key groups
(their keys, so their key groups and order, are unchanged), only the value of each entry of
those states is replaced, with its length. The key groups' offsets move by what the values
before them grew. Canonical streams only (a savepoint's), uncompressed: the others are refused
before anything is written (:func:`convertible_handle`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from statectl.statefmt.bytecolumns import big_endian, delimited, fixed, join_rows, parts_of
from statectl.statefmt.errors import FlinkEncodeError, FlinkFormatError, UsageError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.describe import key_group_blocks
from statectl.statefmt.flink.encode import encode, null_flagged
from statectl.statefmt.flink.handles import IncrementalRocksDB, KeyGroupsStream
from statectl.statefmt.flink.headers import KeyedHeader, StateMeta
from statectl.statefmt.flink.streams import LIST_DELIMITER, _delimited, prefix_bytes, scan_canonical
from statectl.statefmt.flink.types import Buf
from statectl.statefmt.vocabulary import KeyedTable, StateKind

from .conform import conform


def convertible_handle(handle, where: str) -> None:
    """One line for a keyed handle whose values remap cannot rewrite yet."""
    if isinstance(handle, IncrementalRocksDB):
        raise UsageError(f"{where}: its values need converting, which remap does only for a canonical savepoint "
                         "(this is a native RocksDB snapshot: take a canonical savepoint of the old job)")
    if not isinstance(handle, KeyGroupsStream) or handle.layout != "canonical":
        raise UsageError(f"{where}: its values need converting, which remap does only for a canonical savepoint "
                         "(this is a heap backend's native snapshot: take a canonical savepoint of the old job)")


def converted_body(data: bytes, header: KeyedHeader, header_end: int, handle: KeyGroupsStream,
                   max_parallelism: int, targets: dict[str, StateMeta], initial: dict[str, dict],
                   now_ms: int, source: str) -> tuple[bytes, np.ndarray]:
    """The key groups of the stream *data* with the values of the states named in *targets*
    (NEW's metas) rewritten; and each key group's new offset from the start of the key groups
    (as *handle*'s offsets are laid out, 0 for an empty one) before the new header is counted."""
    if header.compressed:
        raise UsageError(f"{source}: its values need converting, which remap does not do for a compressed "
                         "stream yet (take the old job's savepoint without snapshot compression)")
    buf = Buf(data, source)
    raw = scan_canonical(buf, header, key_group_blocks(handle, len(data)), prefix_bytes(max_parallelism))
    spans = []
    for sid, entries in raw.items():
        meta = header.states[sid]
        if meta.name in targets:
            values = converted_values(meta, targets[meta.name], buf, entries, initial.get(meta.name, {}), now_ms)
            spans.append((entries.value_starts, entries.value_ends, values))
    offsets = np.asarray(handle.offsets, dtype=np.int64)
    if not spans:
        return data[header_end:], np.where(offsets > 0, offsets - header_end, 0)
    starts = np.concatenate([s[0] for s in spans])
    ends = np.concatenate([s[1] for s in spans])
    values = pa.concat_arrays([s[2].cast(pa.large_binary()) for s in spans])
    order = np.argsort(starts, kind="stable")
    starts, ends, values = starts[order], ends[order], values.take(pa.array(order))
    lengths = np.diff(parts_of(values)[1])
    gaps = buf.slices(np.concatenate([[header_end], ends[:-1]]), starts - 4)
    body = join_rows([gaps, fixed(big_endian(lengths, ">i4")), values])
    out = parts_of(body)[0].tobytes() + data[int(ends[-1]):]
    grown = np.concatenate([[0], np.cumsum(lengths - (ends - starts))])
    moved = offsets - header_end + grown[np.searchsorted(starts, offsets, side="right")]
    return out, np.where(offsets > 0, moved, 0)


def converted_values(old: StateMeta, new: StateMeta, buf: Buf, entries, initial: dict, now_ms: int) -> pa.Array:
    """The value bytes of every entry of one state (*entries*, OLD's *old*) as NEW's *new* writes them."""
    where = f"state {old.name!r}"
    starts, ends = entries.value_starts, entries.value_ends
    try:
        if old.kind == KeyedTable.TIMERS:
            raise FlinkFormatError(f"{where}: timers have no values to convert")
        if old.kind == StateKind.LIST:
            lists = _delimited(old.value.element, buf, starts, ends)
            elements = conform(lists.values, new.value.element.arrow(), initial, "", now_ms)
            encoded = encode(new.value.element, elements, where)
            return delimited(encoded, np.asarray(lists.offsets, dtype=np.int64), LIST_DELIMITER)
        if old.kind == StateKind.MAP:
            values, _ = T.null_flagged(old.value.value, buf, starts, ends)
            return null_flagged(new.value.value, conform(values, new.value.value.arrow(), initial, "value", now_ms),
                                where)
        values, value_ends = old.value.column(buf, starts, ends)
        if len(value_ends) and (value_ends != ends).any():
            raise FlinkFormatError(f"{buf.source}: {where}: a value does not fill its entry")
        return encode(new.value, conform(values, new.value.arrow(), initial, "", now_ms), where)
    except FlinkEncodeError as e:
        raise UsageError(f"{where} cannot be converted: {e}") from None
