"""The compiled helpers of `statefmt.flink.kernels` against plain Python."""

from __future__ import annotations

import numpy as np
import pytest
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


@pytest.mark.parametrize("small", [0, 1 << 20])
@given(data=st.binary(min_size=1, max_size=80), draw=st.data())
def test_binary_columns_of_slices_by_either_copy(small, data, draw):
    """`bytecolumns.slices` joins rows by numpy's gather up to SMALL_GATHER_BYTES (no compiler to
    start) and by the compiled copy above it: the same column either way, parts joined too."""
    from statectl.statefmt import bytecolumns

    n = len(data)
    parts = draw.draw(st.sampled_from([1, 2]))
    rows = draw.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 2 * SHORT)), max_size=20))
    rows = [(s, min(length, n - s)) for s, length in rows][:len(rows) - len(rows) % parts]
    starts = np.array([s for s, _ in rows], dtype=np.int64)
    ends = np.array([s + length for s, length in rows], dtype=np.int64)
    before, bytecolumns.SMALL_GATHER_BYTES = bytecolumns.SMALL_GATHER_BYTES, small
    try:
        got = bytecolumns.slices(np.frombuffer(data, dtype=np.uint8), starts, ends, parts).to_pylist()
    finally:
        bytecolumns.SMALL_GATHER_BYTES = before
    pieces = [data[s:s + length] for s, length in rows]
    assert got == [b"".join(pieces[i:i + parts]) for i in range(0, len(pieces), parts)]
