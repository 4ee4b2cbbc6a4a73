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


@_inline
def copy_slice(data, start, n, out, at):
    """``data[start:start + n]`` to ``out[at:]``. A slice of at most SHORT bytes is moved as a
    fixed SHORT bytes when both sides have room (a fixed-length loop compiles to a few wide
    moves): the bytes past its end land where the following slices are written next."""
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
def _same_slices(a, a_starts, b, b_starts, lengths):
    for i in range(lengths.shape[0]):
        s, t = a_starts[i], b_starts[i]
        for j in range(lengths[i]):
            if a[s + j] != b[t + j]:
                return False
    return True


def same_slices(a: np.ndarray, a_starts: np.ndarray, b: np.ndarray, b_starts: np.ndarray,
                lengths: np.ndarray) -> bool:
    """Whether ``a[a_starts[i]:][:lengths[i]]`` equals ``b[b_starts[i]:][:lengths[i]]`` for every
    row (the caller has checked the bounds)."""
    return bool(_same_slices(a, np.ascontiguousarray(a_starts, dtype=np.int64), b,
                             np.ascontiguousarray(b_starts, dtype=np.int64),
                             np.ascontiguousarray(lengths, dtype=np.int64)))
