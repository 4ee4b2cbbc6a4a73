"""The compiled helpers of `statefmt.flink.kernels` against plain Python."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from statectl.statefmt.slicekernel import SHORT, concat_slices


def _rows(data: bytes, draw) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Rows (start, length) of *data*, short and long, overlapping, at its very end; their
    starts and their offsets in the joined result."""
    n = len(data)
    rows = draw.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 2 * SHORT)), max_size=20))
    rows = [(s, min(length, n - s)) for s, length in rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([length for _, length in rows], out=offsets[1:])
    return rows, np.array([s for s, _ in rows], dtype=np.int64), offsets


@given(st.binary(min_size=1, max_size=80), st.data())
def test_concat_slices_joins_every_row_exactly(data, draw):
    """The wide moves of short rows never change the result."""
    rows, starts, offsets = _rows(data, draw)
    got = concat_slices(np.frombuffer(data, dtype=np.uint8), starts, offsets)
    assert got.tobytes() == b"".join(data[s:s + length] for s, length in rows)


@given(data=st.binary(min_size=1, max_size=80), draw=st.data())
def test_numpys_gather_joins_slices_as_the_compiled_copy(data, draw):
    """`bytecolumns.gathered_slices` (a lookup's rows, before numba is loaded) joins every row
    as `concat_slices` does; `bytecolumns.slices` cuts the joined bytes into rows, parts joined."""
    from statectl.statefmt import bytecolumns

    rows, starts, offsets = _rows(data, draw)
    array = np.frombuffer(data, dtype=np.uint8)
    assert bytecolumns.gathered_slices(array, starts, offsets).tobytes() == \
        concat_slices(array, starts, offsets).tobytes() == b"".join(data[s:s + length] for s, length in rows)
    parts = draw.draw(st.sampled_from([1, 2]))
    rows = rows[:len(rows) - len(rows) % parts]
    ends = starts[:len(rows)] + np.array([length for _, length in rows], dtype=np.int64)
    got = bytecolumns.slices(array, starts[:len(rows)], ends, parts).to_pylist()
    pieces = [data[s:s + length] for s, length in rows]
    assert got == [b"".join(pieces[i:i + parts]) for i in range(0, len(pieces), parts)]
