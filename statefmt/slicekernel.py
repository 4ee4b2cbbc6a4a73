"""The compiled copy and comparison of many byte slices, for binary columns (`statefmt.bytecolumns`).

Compiled with numba and cached on disk (`statefmt.jit`); numba is imported only
when a column is cut from bytes, never by ``info`` or ``validate``.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

_njit = njit(__file__)
_inline = njit(__file__, inline="always")

SHORT = 16


def words(a: np.ndarray) -> np.ndarray:
    """The 8 bytes starting at each byte of *a* (but its last 7) as one little-endian uint64:
    an unaligned view, no copy, through which short slices are compared a word at a time."""
    return np.ndarray(shape=(max(len(a) - 7, 0),), dtype="<u8", buffer=a, strides=(1,))


@_inline
def low_bytes(n):
    """A word's mask of its first *n* bytes (all of them from 8 on, none below 1)."""
    if n >= 8:
        return ~np.uint64(0)
    if n <= 0:
        return np.uint64(0)
    return (np.uint64(1) << np.uint64(8 * n)) - np.uint64(1)


@_inline
def copy_slice(data, start, n, out, at):
    """``data[start:start + n]`` to ``out[at:]``. A slice of at most SHORT bytes is moved as a
    fixed SHORT bytes when both sides have room (a fixed-length loop compiles to a few wide
    moves; copying it a word at a time measured slower here): the bytes past its end land
    where the following slices are written next."""
    if n <= SHORT and start + SHORT <= data.shape[0] and at + SHORT <= out.shape[0]:
        for j in range(SHORT):
            out[at + j] = data[start + j]
    else:
        for j in range(n):
            out[at + j] = data[start + j]


@_njit
def _copy_slices(data, starts, offsets, out):
    """Rows in order, each where *offsets* puts it."""
    for i in range(starts.shape[0]):
        copy_slice(data, starts[i], offsets[i + 1] - offsets[i], out, offsets[i])


@_njit
def _gather_rows(data, starts, width, out):
    for i in range(starts.shape[0]):
        copy_slice(data, starts[i], width, out, i * width)


def gather_rows(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """An (n, width) matrix of the *width* bytes at each start (the caller has checked the bounds)."""
    out = np.empty(len(starts) * width, dtype=np.uint8)
    _gather_rows(data, np.ascontiguousarray(starts, dtype=np.int64), width, out)
    return out.reshape(len(starts), width)


def concat_slices(data: np.ndarray, starts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The bytes ``data[starts[i] : starts[i] + offsets[i+1] - offsets[i]]`` of every row, joined
    (*offsets* are the rows' offsets in the result; the caller has checked the bounds)."""
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    _copy_slices(data, starts, offsets, out)
    return out


@_njit
def _same_slices(a, a_words, a_starts, b, b_words, b_starts, lengths):
    for i in range(lengths.shape[0]):
        s, t, n = a_starts[i], b_starts[i], lengths[i]
        if n <= SHORT and s + SHORT <= a.shape[0] and t + SHORT <= b.shape[0]:
            if ((a_words[s] ^ b_words[t]) & low_bytes(n)) | ((a_words[s + 8] ^ b_words[t + 8]) & low_bytes(n - 8)):
                return False
        else:
            for j in range(n):
                if a[s + j] != b[t + j]:
                    return False
    return True


def same_slices(a: np.ndarray, a_starts: np.ndarray, b: np.ndarray, b_starts: np.ndarray,
                lengths: np.ndarray) -> bool:
    """Whether ``a[a_starts[i]:][:lengths[i]]`` equals ``b[b_starts[i]:][:lengths[i]]`` for every
    row (the caller has checked the bounds)."""
    return bool(_same_slices(a, words(a), np.ascontiguousarray(a_starts, dtype=np.int64), b, words(b),
                             np.ascontiguousarray(b_starts, dtype=np.int64),
                             np.ascontiguousarray(lengths, dtype=np.int64)))
