"""TTL entries expired at a time, found in their bytes: the values themselves never decoded.

A TTL state's value (a map's every entry's value, a list's every element) is Flink's
``TtlValue``: its last-access timestamp, 8 bytes big-endian, then the user value. So whether an
entry of a canonical stream or a native RocksDB snapshot (:class:`~.streams.RawEntries`) is
expired takes 8 bytes: a value (reducing, aggregating) state's at its value's start, a map
entry's after its null flag. A list's elements are delimited by their type
(:func:`~.streams.list_rounds`, as the reader does), each checked, and the kept ones joined
again. Expiry is Flink's rule (:func:`statectl.statefmt.expiry.expired`). What `prune
--expired-at` of an operator moved as its bytes (writers/flink/regroup) needs: values statectl
cannot decode (Kryo, Avro, POJOs) are pruned as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..bytecolumns import delimited
from ..errors import FlinkFormatError
from ..expiry import expired
from ..vocabulary import StateKind
from .headers import StateMeta
from .list_layout import LIST_DELIMITER
from .streams import RawEntries, list_rounds
from .types import as_dtype

STAMP_BYTES = 8


@dataclass(frozen=True)
class LiveEntries:
    """What is left of one state's entries: which are kept, their value bytes where they
    changed (a list's: its expired elements gone; None: every kept entry's own bytes) and how
    many values, map entries or list elements went."""

    keep: np.ndarray  # bool, per entry
    values: pa.Array | None
    removed: int


def live_entries(meta: StateMeta, raw: RawEntries, ttl: int, now: int) -> LiveEntries:
    """The entries of the TTL state *meta* in *raw* not expired at *now* (epoch ms) with a time
    to live of *ttl* ms."""
    if meta.kind == StateKind.LIST:
        return _live_lists(meta, raw, ttl, now)
    buf, starts, ends = raw.buf, raw.value_starts, raw.value_ends
    wrapped = np.ones(len(starts), dtype=bool)
    if meta.kind == StateKind.MAP:  # a null flag first: a null value holds no timestamp
        _check_room(raw, starts, ends, 1)
        wrapped = buf.arr[starts] == 0
        starts = starts + 1
    _check_room(raw, starts[wrapped], ends[wrapped], STAMP_BYTES)
    gone = np.zeros(len(starts), dtype=bool)
    gone[wrapped] = expired(_stamps(buf, starts[wrapped]), ttl, now)
    return LiveEntries(~gone, None, int(gone.sum()))


def _live_lists(meta: StateMeta, raw: RawEntries, ttl: int, now: int) -> LiveEntries:
    """Lists without their expired elements; a list they all leave is no entry."""
    buf, n = raw.buf, len(raw.value_starts)
    lists, starts, ends = [], [], []
    for active, at, end, _ in list_rounds(meta.value.element, buf, raw.value_starts, raw.value_ends):
        _check_room(raw, at, end, STAMP_BYTES)
        lists.append(active)
        starts.append(at)
        ends.append(end)
    if not lists:
        return LiveEntries(np.ones(n, dtype=bool), None, 0)
    lists, starts, ends = (np.concatenate(a) for a in (lists, starts, ends))
    order = np.argsort(lists, kind="stable")  # each list's elements in their order (rounds are)
    lists, starts, ends = lists[order], starts[order], ends[order]
    alive = ~expired(_stamps(buf, starts), ttl, now)
    kept = np.bincount(lists[alive], minlength=n)
    keep = (kept > 0) | (np.bincount(lists, minlength=n) == 0)  # an empty list stays as it is
    offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(kept[keep], out=offsets[1:])
    values = delimited(buf.slices(starts[alive], ends[alive]), offsets, LIST_DELIMITER)
    return LiveEntries(keep, values, int((~alive).sum()))


def _stamps(buf, starts: np.ndarray) -> np.ndarray:
    return as_dtype(buf.gather(starts, STAMP_BYTES), ">i8").astype("<i8")


def _check_room(raw: RawEntries, starts: np.ndarray, ends: np.ndarray, width: int) -> None:
    short = starts + width > ends
    if short.any():
        at = int(starts[np.argmax(short)])
        raise FlinkFormatError(f"{raw.buf.source}: a TTL value at offset {raw.buf.base + at} is shorter "
                               f"than its {width}-byte {'timestamp' if width == STAMP_BYTES else 'null flag'}")
