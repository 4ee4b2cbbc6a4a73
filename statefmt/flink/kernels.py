"""The per-entry walks of Flink streams, compiled with numba.

A canonical keyed stream gives each entry's length only at the entry itself,
so finding where entries start is a sequential walk that numpy cannot express;
in Python it costs about a microsecond per entry (:mod:`.walk` walks a few key groups so,
sparing a lookup numba's start). Here it runs compiled
and cached on disk (`statefmt.jit`: beside this module, in the user's cache, or
under statectl's scratch space, so a Python worker compiles it once, not per task).
Kernels return an error code and the offset where the stream stopped making
sense; the callers turn that into one error line. numba is imported only when a
stream is decoded, never by ``info`` or ``validate``.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .walk import ENDS_EARLY, OK, TRAILING, UNKNOWN_STATE

_njit = njit(__file__)


@_njit
def _u16(data, pos):
    return (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])


@_njit
def _i32(data, pos):
    v = (np.int64(data[pos]) << 24) | (np.int64(data[pos + 1]) << 16) \
        | (np.int64(data[pos + 2]) << 8) | np.int64(data[pos + 3])
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


@_njit
def _walk(data, blocks, n_states, prefix, last_mark, end_mark, fill, counts, slot, groups, key_starts, key_ends,
          value_ends):
    """One pass over the key-group *blocks* ``(key group, start, end)`` rows.

    Without *fill*, counts the entries of each state into *counts*; with it,
    writes each entry's key group, key start (after the prefix), key end and
    value end at ``slot[state]`` (advanced). Returns (code, block index, offset,
    state id).
    """
    for b in range(blocks.shape[0]):
        pos, end = blocks[b, 1], min(blocks[b, 2], data.shape[0])
        if pos + 2 > end:
            return ENDS_EARLY, b, pos, 0
        sid = _u16(data, pos)
        pos += 2
        while True:
            if sid >= n_states:
                return UNKNOWN_STATE, b, pos - 2, sid
            while True:
                if pos + 4 > end:
                    return ENDS_EARLY, b, pos, sid
                key_len = _i32(data, pos)
                if key_len < prefix or pos + 8 + key_len > end:
                    return ENDS_EARLY, b, pos, sid
                value_len = _i32(data, pos + 4 + key_len)
                if value_len < 0 or pos + 8 + key_len + value_len > end:
                    return ENDS_EARLY, b, pos, sid
                meta_follows = data[pos + 4] & last_mark
                if fill:
                    i = slot[sid]
                    groups[i] = blocks[b, 0]
                    key_starts[i] = pos + 4 + prefix
                    key_ends[i] = pos + 4 + key_len
                    value_ends[i] = pos + 8 + key_len + value_len
                    slot[sid] = i + 1
                else:
                    counts[sid] += 1
                pos += 8 + key_len + value_len
                if meta_follows:
                    break
            if pos + 2 > end:
                return ENDS_EARLY, b, pos, sid
            sid = _u16(data, pos)
            pos += 2
            if sid == end_mark:
                if pos != end:  # bytes after the key group's end mark belong to nothing
                    return TRAILING, b, pos, 0
                break
    return OK, 0, 0, 0


ONE_PASS_BYTES = 64 << 20  # the most a walk reserves (untouched) to find every state's entries in one pass


def walk_canonical(data: np.ndarray, blocks: np.ndarray, n_states: int, prefix: int, last_mark: int,
                   end_mark: int):
    """Per state id, its entries' (key groups, key starts, key ends, value ends) in
    stream order; or None and an error ``(code, block index, offset, state id)``.

    *data* is the stream (uint8), *blocks* an int64 ``(n, 3)`` array of (key group,
    start, end). Keys start after their key-group prefix; values start 4 bytes
    after their key ends (the value's length).

    An entry takes at least ``8 + prefix`` bytes, so no state has more entries than *data*
    holds of those: where that bound for every state fits :data:`ONE_PASS_BYTES`, each state
    gets that room (reserved, touched only where entries are written) and one pass fills it;
    else a first pass counts each state's entries and a second writes them.
    """
    bound = len(data) // (8 + prefix) + 1
    if n_states * bound * 28 <= ONE_PASS_BYTES:
        return _filled(data, blocks, n_states, prefix, last_mark, end_mark,
                       np.arange(n_states, dtype=np.int64) * bound, n_states * bound)
    counts = np.zeros(n_states, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    error = _walk(data, blocks, n_states, prefix, last_mark, end_mark, False, counts,
                  none, none.astype(np.int32), none, none, none)
    if error[0] != OK:
        return None, error
    firsts = np.zeros(n_states + 1, dtype=np.int64)
    np.cumsum(counts, out=firsts[1:])
    return _filled(data, blocks, n_states, prefix, last_mark, end_mark, firsts[:-1], int(firsts[-1]))


def _filled(data, blocks, n_states, prefix, last_mark, end_mark, firsts, size):
    """The walk that writes each state's entries from ``firsts[state]`` on, in arrays of *size*."""
    groups = np.empty(size, dtype=np.int32)
    key_starts, key_ends, value_ends = (np.empty(size, dtype=np.int64) for _ in range(3))
    slot = firsts.copy()
    error = _walk(data, blocks, n_states, prefix, last_mark, end_mark, True, np.empty(0, dtype=np.int64),
                  slot, groups, key_starts, key_ends, value_ends)
    if error[0] != OK:
        return None, error
    out = {}
    for sid in np.nonzero(slot > firsts)[0].tolist():
        part = slice(firsts[sid], slot[sid])
        out[sid] = (groups[part], key_starts[part], key_ends[part], value_ends[part])
    return out, None
