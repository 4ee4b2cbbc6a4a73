"""The walks of RocksDB block-based tables in plain Python, and the choice between them and the
compiled ones (:mod:`.sstkernels`).

The compiled walks cost their start once per process: importing numba and loading its CPU
target take about 0.4 s before a cached kernel runs, the time of walking some hundred
thousand entries here. A key lookup or an explorer page reads a table's metaindex,
properties and index blocks and one key group's data blocks, so :func:`walk_blocks`,
:func:`in_order`, :func:`merge_runs` and :func:`live` run their plain forms (:data:`PLAIN`)
while the process has not started numba and has walked less than
:data:`statectl.statefmt.jit.PLAIN_BUDGET` so (:func:`~statectl.statefmt.jit.walk_plainly`),
and the compiled ones after. Both forms give the same answers, errors included
(tests/statefmt/test_rocksdb_sstread.py).
"""

from __future__ import annotations

import heapq
from types import SimpleNamespace

import numpy as np

from ..jit import walk_plainly
from .sstcodes import BAD_ENTRY, BAD_SHARED, DELETION, HASH_INDEX, MERGE, SINGLE_DELETION, VALUE  # noqa: F401 (callers take them here)

ENTRY_COST = 64  # an entry merged or made live counts as this many bytes walked (jit.walk_plainly)


def walk_blocks(data: np.ndarray, blocks: np.ndarray, handles: bool = False, delta: bool = False):
    """:func:`.sstkernels.walk_blocks`, in either form."""
    return _form(len(data)).walk_blocks(data, blocks, handles, delta)


def in_order(keys, starts, ends, seqs) -> bool:
    """:func:`.sstkernels.in_order`, in either form."""
    return _form(len(starts) * ENTRY_COST).in_order(keys, starts, ends, seqs)


def merge_runs(keys, starts, ends, seqs, runs: np.ndarray) -> np.ndarray:
    """:func:`.sstkernels.merge_runs`, in either form."""
    return _form(len(starts) * ENTRY_COST).merge_runs(keys, starts, ends, seqs, runs)


def live(keys, key_starts, key_ends, kinds, values, value_starts, value_ends, order, delimiter: int):
    """:func:`.sstkernels.live`, in either form."""
    return _form(len(order) * ENTRY_COST).live(keys, key_starts, key_ends, kinds, values, value_starts,
                                               value_ends, order, delimiter)


def _form(cost: int):
    if walk_plainly(cost):
        return PLAIN
    from . import sstkernels

    return sstkernels


# --- the plain forms -----------------------------------------------------------------------

def _walk_blocks(data: np.ndarray, blocks: np.ndarray, handles: bool = False, delta: bool = False):
    return _walk_small(data.tobytes(), blocks, handles, delta)


def _in_order(keys, starts, ends, seqs) -> bool:
    ordered = _internal_keys(keys, starts, ends, seqs)
    return all(a <= b for a, b in zip(ordered, ordered[1:]))


def _merge_runs(keys, starts, ends, seqs, runs: np.ndarray) -> np.ndarray:
    """A k-way merge; among equal internal keys the earlier run first, as the compiled one."""
    internal = _internal_keys(keys, starts, ends, seqs)
    bounds = runs.tolist()
    merged = heapq.merge(*(((internal[i], i) for i in range(a, b)) for a, b in zip(bounds, bounds[1:])),
                         key=lambda pair: pair[0])
    return np.fromiter((i for _, i in merged), np.int64, int(bounds[-1]))


def _live(keys, key_starts, key_ends, kinds, values, value_starts, value_ends, order, delimiter: int):
    kb, vb = keys.tobytes(), values.tobytes()
    ks, ke, kinds_, vs, ve = (a.tolist() for a in (key_starts, key_ends, kinds, value_starts, value_ends))
    order = order.tolist()
    firsts, out_starts, out_ends, joined = [], [], [], bytearray()
    i, n, base_len = 0, len(order), len(vb)
    while i < n:
        first = order[i]
        user_key = kb[ks[first]:ke[first]]
        j = i + 1
        while j < n and kb[ks[order[j]]:ke[order[j]]] == user_key:
            j += 1
        operands, base = [], -1
        for e in order[i:j]:  # newest first
            if kinds_[e] == VALUE:
                base = e
                break
            if kinds_[e] == MERGE:
                operands.append(e)
            elif kinds_[e] not in (DELETION, SINGLE_DELETION):
                return None, e
            else:
                break
        parts = ([base] if base >= 0 else []) + operands[::-1]  # the value, then operands oldest first
        if len(parts) == 1:
            firsts.append(first)
            out_starts.append(vs[parts[0]])
            out_ends.append(ve[parts[0]])
        elif parts:
            firsts.append(first)
            out_starts.append(base_len + len(joined))
            joined += bytes([delimiter]).join(vb[vs[e]:ve[e]] for e in parts)
            out_ends.append(base_len + len(joined))
        i = j
    as_array = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return (as_array(firsts), as_array(out_starts), as_array(out_ends), np.frombuffer(bytes(joined), np.uint8)), None


def _internal_keys(keys, starts, ends, seqs) -> list[tuple[bytes, int]]:
    """Each entry's sort key: its user key, then newest (highest sequence number) first."""
    if not len(starts):
        return []
    lo = int(starts.min())
    kb = keys[lo:int(ends.max())].tobytes()  # the part of the buffer these entries use
    return [(kb[s - lo:e - lo], -q) for s, e, q in zip(starts.tolist(), ends.tolist(), seqs.tolist())]


def _u32(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos:pos + 4], "little")


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) as the compiled walk reads it (64-bit, wrapping); -1 past *end*."""
    result, shift = 0, 0
    while pos < end and shift <= 63:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            result &= (1 << 64) - 1
            return (result - (1 << 64) if result >= 1 << 63 else result), pos
        shift += 7
    return 0, -1


def _walk_small(data: bytes, blocks: np.ndarray, handles: bool, delta: bool):
    """:func:`.sstkernels._walk` over *data* (bytes), one pass filling lists."""
    keys = bytearray()
    key_offsets, value_starts, value_ends, h_off, h_size, block_firsts = [0], [], [], [], [], []
    for b, (start, end) in enumerate(blocks.tolist()):
        block_firsts.append(len(value_starts))
        if end - start < 4:
            return None, (BAD_ENTRY, b, start)
        footer = _u32(data, end - 4)
        if footer & 0x80000000:
            return None, (HASH_INDEX, b, end - 4)
        restarts = end - 4 - 4 * footer
        if footer < 1 or restarts < start:
            return None, (BAD_ENTRY, b, end - 4)
        next_restart, prev_start, prev_len, prev_off, prev_size = 0, 0, 0, 0, 0
        pos = start
        while pos < restarts:
            at_restart = next_restart < footer and start + _u32(data, restarts + 4 * next_restart) == pos
            next_restart += at_restart
            entry = pos
            if pos + 3 <= restarts and data[pos] < 0x80 and data[pos + 1] < 0x80 and data[pos + 2] < 0x80:
                shared, unshared, value_len = data[pos], data[pos + 1], 0 if delta else data[pos + 2]
                pos += 2 if delta else 3  # the usual entry: three one-byte varints
            else:
                shared, pos = _varint(data, pos, restarts)
                if pos >= 0:
                    unshared, pos = _varint(data, pos, restarts)
                value_len = 0
                if pos >= 0 and not delta:
                    value_len, pos = _varint(data, pos, restarts)
            if pos < 0 or shared < 0 or unshared < 0 or value_len < 0:  # or a varint past 63 bits
                return None, (BAD_ENTRY, b, entry)
            if shared > prev_len or (at_restart and shared != 0) or pos + unshared > restarts:
                return None, (BAD_SHARED if shared > prev_len else BAD_ENTRY, b, entry)
            kpos = len(keys)
            keys += keys[prev_start:prev_start + shared]
            keys += data[pos:pos + unshared]
            key_offsets.append(len(keys))
            prev_start, prev_len = kpos, shared + unshared
            pos += unshared
            value_start = pos
            if handles:
                if delta and not at_restart:  # only the size, as a signed (zigzag) delta
                    z, pos = _varint(data, pos, restarts)
                    off, size = prev_off + prev_size + 5, prev_size + ((z >> 1) ^ -(z & 1))
                else:
                    off, pos = _varint(data, pos, restarts)
                    if pos < 0:
                        return None, (BAD_ENTRY, b, entry)
                    size, pos = _varint(data, pos, restarts)
                if pos < 0 or size < 0 or (not delta and pos != value_start + value_len):
                    return None, (BAD_ENTRY, b, entry)
                prev_off, prev_size = off, size
                h_off.append(off)
                h_size.append(size)
            else:
                pos += value_len
            if pos > restarts:
                return None, (BAD_ENTRY, b, entry)
            value_starts.append(value_start)
            value_ends.append(pos)
    block_firsts.append(len(value_starts))
    ints = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return (np.frombuffer(bytes(keys), np.uint8), ints(key_offsets), ints(value_starts), ints(value_ends),
            ints(h_off), ints(h_size), ints(block_firsts)), None


PLAIN = SimpleNamespace(walk_blocks=_walk_blocks, in_order=_in_order, merge_runs=_merge_runs, live=_live)
