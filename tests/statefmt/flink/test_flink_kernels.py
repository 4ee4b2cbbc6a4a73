"""The compiled helpers of `statefmt.flink.kernels` against plain Python."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from statectl.statefmt.slicekernel import SHORT, concat_slices


@given(st.binary(min_size=1, max_size=80), st.data())
def test_concat_slices_joins_every_row_exactly(data, draw):
    """Rows short and long, overlapping, at the very end of the data: the wide moves of short
    rows never change the result."""
    n = len(data)
    rows = draw.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 2 * SHORT)), max_size=20))
    rows = [(s, min(length, n - s)) for s, length in rows]
    starts = np.array([s for s, _ in rows], dtype=np.int64)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([length for _, length in rows], out=offsets[1:])
    got = concat_slices(np.frombuffer(data, dtype=np.uint8), starts, offsets)
    assert got.tobytes() == b"".join(data[s:s + length] for s, length in rows)
