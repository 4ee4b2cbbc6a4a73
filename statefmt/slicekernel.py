"""The compiled copy of many byte slices into one buffer, for binary columns (`statefmt.bytecolumns`).

Compiled with numba and cached on disk (`statefmt.jit`); numba is imported only
when a column is cut from bytes, never by ``info`` or ``validate``.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

_njit = njit(__file__)

SHORT = 16


@_njit
def _copy_slices(data, starts, offsets, out):
    """Rows in order; a row of at most SHORT bytes is moved as a fixed SHORT bytes when both
    sides have room (a fixed-length loop compiles to a few wide moves): the bytes past its
    end land where the following rows are written next, so the result is the same."""
    n_data, n_out = data.shape[0], out.shape[0]
    for i in range(starts.shape[0]):
        s, o = starts[i], offsets[i]
        n = offsets[i + 1] - o
        if n <= SHORT and s + SHORT <= n_data and o + SHORT <= n_out:
            for j in range(SHORT):
                out[o + j] = data[s + j]
        else:
            for j in range(n):
                out[o + j] = data[s + j]


def concat_slices(data: np.ndarray, starts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The bytes ``data[starts[i] : starts[i] + offsets[i+1] - offsets[i]]`` of every row, joined
    (*offsets* are the rows' offsets in the result; the caller has checked the bounds)."""
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    _copy_slices(data, starts, offsets, out)
    return out
