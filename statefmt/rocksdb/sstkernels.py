"""The per-entry walks of RocksDB block-based tables, compiled with numba.

A block's entries are prefix-compressed (each key names how many bytes it
shares with the one before), so finding and rebuilding keys is a sequential walk
that numpy cannot express. :func:`walk_blocks` rebuilds every key of many
blocks in one call; :func:`merge_runs` orders the entries of overlapping files;
:func:`live` turns the sorted internal entries of a column family into its live
key/value pairs (newest version wins, deletions
drop, merge operands are joined by the string-append operator's delimiter).
Kernels return an error code and where the walk stopped; `.sstread` turns that
into one error line naming the file. A few blocks are walked in plain Python instead
(:mod:`.sstwalk`, which chooses; both answer in :mod:`.sstcodes`).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .sstcodes import BAD_ENTRY, BAD_SHARED, DELETION, HASH_INDEX, MERGE, OK, SINGLE_DELETION, VALUE  # noqa: F401

_njit = njit(__file__)


@_njit
def _varint(data, pos, end):
    """(value, next position); next position -1 when the varint runs past *end*.

    The compiled copy of :func:`statectl.statefmt.varint.read_varint`: nopython code cannot
    call that one, nor raise its error.
    """
    result = np.int64(0)
    shift = 0
    while pos < end and shift <= 63:
        b = np.int64(data[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    return np.int64(0), -1


@_njit
def _u32(data, pos):
    return (np.int64(data[pos]) | (np.int64(data[pos + 1]) << 8) | (np.int64(data[pos + 2]) << 16)
            | (np.int64(data[pos + 3]) << 24))


@_njit
def _walk(data, blocks, handles, delta, fill, keys, key_offsets, value_starts, value_ends,
          handle_offsets, handle_sizes, block_firsts):
    """One pass over the blocks ``(start, end)`` of *data*; see :func:`walk_blocks`.
    Returns (code, block index, offset, entries, key bytes)."""
    n = 0
    kpos = 0
    for b in range(blocks.shape[0]):
        if fill:
            block_firsts[b] = n
        start, end = blocks[b, 0], blocks[b, 1]
        if end - start < 4:
            return BAD_ENTRY, b, start, n, kpos
        footer = _u32(data, end - 4)
        if footer & 0x80000000:
            return HASH_INDEX, b, end - 4, n, kpos
        restarts = end - 4 - 4 * footer
        if footer < 1 or restarts < start:
            return BAD_ENTRY, b, end - 4, n, kpos
        next_restart_i = 0
        prev_start, prev_len = np.int64(0), np.int64(0)
        prev_off, prev_size = np.int64(0), np.int64(0)
        pos = start
        while pos < restarts:
            at_restart = False
            if next_restart_i < footer and start + _u32(data, restarts + 4 * next_restart_i) == pos:
                at_restart = True
                next_restart_i += 1
            entry = pos
            shared, pos = _varint(data, pos, restarts)
            if pos < 0:
                return BAD_ENTRY, b, entry, n, kpos
            unshared, pos = _varint(data, pos, restarts)
            if pos < 0:
                return BAD_ENTRY, b, entry, n, kpos
            value_len = np.int64(0)
            if not delta:
                value_len, pos = _varint(data, pos, restarts)
                if pos < 0:
                    return BAD_ENTRY, b, entry, n, kpos
            if shared < 0 or unshared < 0 or value_len < 0:  # a varint past 63 bits
                return BAD_ENTRY, b, entry, n, kpos
            if shared > prev_len or (at_restart and shared != 0) or pos + unshared > restarts:
                return BAD_SHARED if shared > prev_len else BAD_ENTRY, b, entry, n, kpos
            key_len = shared + unshared
            if fill:
                for j in range(shared):
                    keys[kpos + j] = keys[prev_start + j]
                for j in range(unshared):
                    keys[kpos + shared + j] = data[pos + j]
                key_offsets[n] = kpos
                key_offsets[n + 1] = kpos + key_len
            prev_start, prev_len = kpos, key_len
            kpos += key_len
            pos += unshared
            value_start = pos
            if handles:
                if delta and not at_restart:  # only the size, as a signed (zigzag) delta
                    z, pos = _varint(data, pos, restarts)
                    off = prev_off + prev_size + 5
                    size = prev_size + ((z >> 1) ^ -(z & 1))
                else:
                    off, pos = _varint(data, pos, restarts)
                    if pos < 0:
                        return BAD_ENTRY, b, entry, n, kpos
                    size, pos = _varint(data, pos, restarts)
                if pos < 0 or size < 0 or (not delta and pos != value_start + value_len):
                    return BAD_ENTRY, b, entry, n, kpos
                prev_off, prev_size = off, size
                if fill:
                    handle_offsets[n] = off
                    handle_sizes[n] = size
            else:
                pos += value_len
            if pos > restarts:
                return BAD_ENTRY, b, entry, n, kpos
            if fill:
                value_starts[n] = value_start
                value_ends[n] = pos
            n += 1
    if fill:
        block_firsts[blocks.shape[0]] = n
    return OK, 0, 0, n, kpos


def walk_blocks(data: np.ndarray, blocks: np.ndarray, handles: bool = False, delta: bool = False):
    """Every entry of the blocks ``blocks[i] = (start, end)`` of *data* (uint8): its full
    key, rebuilt into one new buffer, and where its value lies in *data*.

    Returns ``(keys, key_offsets, value_starts, value_ends, handle_offsets,
    handle_sizes, block_firsts)`` (entry *i*'s key is ``keys[key_offsets[i]:key_offsets[i+1]]``;
    the handles are filled when *handles*: index blocks, whose values are block
    handles, *delta*-encoded or not; block *b*'s entries are ``block_firsts[b]`` to
    ``block_firsts[b+1]``), or None and ``(code, block index, offset)``.
    """
    none = np.empty(0, dtype=np.int64)
    code, b, at, n, total = _walk(data, blocks, handles, delta, False, none.astype(np.uint8), none, none,
                                  none, none, none, none)
    if code != OK:
        return None, (code, b, at)
    keys = np.empty(total, dtype=np.uint8)
    key_offsets = np.zeros(n + 1, dtype=np.int64)
    value_starts, value_ends = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    h_off = np.empty(n if handles else 0, dtype=np.int64)
    h_size = np.empty(n if handles else 0, dtype=np.int64)
    block_firsts = np.empty(blocks.shape[0] + 1, dtype=np.int64)
    _walk(data, blocks, handles, delta, True, keys, key_offsets, value_starts, value_ends, h_off, h_size,
          block_firsts)
    return (keys, key_offsets, value_starts, value_ends, h_off, h_size, block_firsts), None


@_njit
def _compare(keys, a0, a1, b0, b1):
    """Bytewise comparison of two keys (RocksDB's default comparator): -1, 0 or 1."""
    la, lb = a1 - a0, b1 - b0
    for j in range(min(la, lb)):
        x, y = keys[a0 + j], keys[b0 + j]
        if x != y:
            return -1 if x < y else 1
    return -1 if la < lb else (1 if la > lb else 0)


@_njit
def _before(keys, starts, ends, seqs, a, b):
    """Whether internal entry *a* sorts before *b*: lower user key, or the same and newer."""
    c = _compare(keys, starts[a], ends[a], starts[b], ends[b])
    return c < 0 or (c == 0 and seqs[a] > seqs[b])


@_njit
def in_order(keys, starts, ends, seqs):
    """Whether the entries are sorted by user key ascending, then sequence number descending."""
    for i in range(1, starts.shape[0]):
        if _before(keys, starts, ends, seqs, i, i - 1):
            return False
    return True


@_njit
def _merge_runs(keys, starts, ends, seqs, runs, order):
    heads = runs[:-1].copy()
    for i in range(order.shape[0]):
        best, best_run = -1, -1
        for r in range(heads.shape[0]):
            if heads[r] < runs[r + 1] and (best < 0 or _before(keys, starts, ends, seqs, heads[r], best)):
                best, best_run = heads[r], r
        order[i] = best
        heads[best_run] += 1


def merge_runs(keys, starts, ends, seqs, runs: np.ndarray) -> np.ndarray:
    """The positions of all entries in internal-key order, given sorted runs
    ``[runs[r], runs[r+1])`` (one per file): a k-way merge, newest first among equal keys."""
    order = np.empty(int(runs[-1]), dtype=np.int64)
    _merge_runs(keys, starts, ends, seqs, runs.astype(np.int64), order)
    return order


@_njit
def _live(keys, key_starts, key_ends, kinds, value_starts, value_ends, values, order, delimiter,
          firsts, out_starts, out_ends, joined, operands):
    """See :func:`live`; returns (code, live keys, joined bytes used, bad entry)."""
    n = order.shape[0]
    base_len = values.shape[0]
    at, k, i = 0, 0, 0
    while i < n:
        first = order[i]
        j = i + 1
        while j < n and _compare(keys, key_starts[order[j]], key_ends[order[j]],
                                 key_starts[first], key_ends[first]) == 0:
            j += 1
        # entries i..j-1: one user key, newest first
        n_ops, base = 0, -1
        for m in range(i, j):
            e = order[m]
            kind = kinds[e]
            if kind == VALUE:
                base = e
                break
            if kind == MERGE:
                operands[n_ops] = e
                n_ops += 1
            elif kind == DELETION or kind == SINGLE_DELETION:
                break
            else:
                return 1, k, at, e
        parts = n_ops + (1 if base >= 0 else 0)
        if parts == 1:  # the value as it lies
            e = base if base >= 0 else operands[0]
            firsts[k], out_starts[k], out_ends[k] = first, value_starts[e], value_ends[e]
            k += 1
        elif parts > 1:  # joined: the value, then the operands oldest first
            firsts[k], out_starts[k] = first, base_len + at
            written = 0
            for m in range(-1 if base >= 0 else 0, n_ops):
                e = base if m < 0 else operands[n_ops - 1 - m]
                if written:
                    joined[at] = delimiter
                    at += 1
                s, t = value_starts[e], value_ends[e]
                for q in range(t - s):
                    joined[at + q] = values[s + q]
                at += t - s
                written += 1
            out_ends[k] = base_len + at
            k += 1
        i = j
    return 0, k, at, 0


def live(keys: np.ndarray, key_starts: np.ndarray, key_ends: np.ndarray, kinds: np.ndarray,
         values: np.ndarray, value_starts: np.ndarray, value_ends: np.ndarray, order: np.ndarray,
         delimiter: int):
    """The live entries of internal entries taken in *order* (sorted by user key, newest
    first), without copying what needs no change: ``(entries, value_starts, value_ends,
    joined)``, per live user key the position of one of its entries (its key) and where its
    value lies in ``values`` followed by ``joined``. A value wins over older versions, a
    deletion hides them, merge operands are joined (oldest first, after the value they
    apply to, if any) with *delimiter* into ``joined``. Or None and the index of an entry
    of an unknown kind."""
    n = len(order)
    joined_size = int((value_ends - value_starts)[order].sum()) + n if (kinds[order] == MERGE).any() else 0
    joined = np.empty(joined_size, dtype=np.uint8)
    firsts, out_starts, out_ends = (np.empty(n, dtype=np.int64) for _ in range(3))
    operands = np.empty(n, dtype=np.int64)
    code, k, at, bad = _live(keys, key_starts, key_ends, kinds, value_starts, value_ends, values, order,
                             delimiter, firsts, out_starts, out_ends, joined, operands)
    if code:
        return None, int(bad)
    return (firsts[:k], out_starts[:k], out_ends[:k], joined[:at]), None
