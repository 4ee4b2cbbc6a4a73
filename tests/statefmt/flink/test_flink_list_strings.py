"""A list state of Strings (elements separated by ','), decoded by compiled passes when its
strings are short and ASCII (`streams._short_strings`), gives what the general decoder's rounds
give (`streams._delimited_in_rounds`), element for element; anything else it leaves to them:
longer or non-ASCII strings, nulls, and lists damaged anywhere (whose error the rounds word).
The same for columns of single Strings (`String.column`), and the comparison of rows' bytes in
place that joins a keyed table's states (`Extents.same`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.encode import encode
from statectl.statefmt.flink.streams import _delimited, _delimited_in_rounds, _short_strings
from statectl.statefmt.flink.types import Buf

SHORT_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=126)
ANY_TEXT = st.one_of(SHORT_ASCII, st.text(max_size=200))


def lists_bytes(lists: list[list[str]]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The lists as a RocksDB list state writes them, back to back: (bytes, starts, ends)."""
    parts, starts, ends, at = [], [], [], 0
    for items in lists:
        value = b",".join(encode(T.String(), pa.array(items, pa.string())).to_pylist()) if items else b""
        parts.append(value)
        starts.append(at)
        at += len(value)
        ends.append(at)
    return b"".join(parts), np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def by_rounds(buf: Buf, starts, ends):
    """The rounds' lists, or their error's text (a ValueError too: `savepoint._decoding` words it)."""
    try:
        return _delimited_in_rounds(T.String(), buf, starts, ends)
    except (StatectlError, ValueError) as e:
        return str(e)


@settings(max_examples=300)
@given(st.lists(st.lists(SHORT_ASCII, max_size=5), max_size=30))
def test_short_ascii_lists_are_taken_by_the_compiled_passes_as_the_rounds_give_them(lists):
    data, starts, ends = lists_bytes(lists)
    buf = Buf(data, "stream")
    got = _short_strings(buf, starts, ends)
    assert got is not None
    assert got.equals(by_rounds(buf, starts, ends))
    assert got.to_pylist() == lists


@settings(max_examples=500)
@given(st.lists(st.lists(ANY_TEXT, max_size=4), min_size=1, max_size=12), st.data())
def test_any_lists_damaged_or_not_give_the_rounds_answer(lists, data):
    raw, starts, ends = lists_bytes(lists)
    raw = bytearray(raw)
    if raw and data.draw(st.booleans()):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    buf = Buf(bytes(raw), "stream")
    want = by_rounds(buf, starts, ends)
    got = _short_strings(buf, starts, ends)
    assert got is None or (not isinstance(want, str) and got.equals(want)), (got, want)
    try:
        assert _delimited(T.String(), buf, starts, ends).equals(want)
    except (StatectlError, ValueError) as e:
        assert str(e) == want


def general_strings(buf: Buf, starts):
    """The Strings at *starts* decoded one by one (the general decoder), or its error's text."""
    from statectl.statefmt.flink.types.base import FlinkType
    try:
        return FlinkType.column(T.String(), buf, starts)
    except (StatectlError, ValueError) as e:
        return str(e)


@settings(max_examples=500)
@given(st.lists(st.one_of(st.none(), ANY_TEXT), min_size=1, max_size=30), st.data())
def test_string_columns_compiled_give_the_general_decoders_answer(strings, data):
    """`String.column` once numba runs (`stringkernels.short_ascii_strings`): every String, null,
    damaged or not, as the general decoder reads it, with where each ends; else its error."""
    from statectl.statefmt.flink.stringkernels import short_ascii_strings

    values = encode(T.String(), pa.array(strings, pa.string())).to_pylist()
    starts = np.cumsum([0] + [len(v) for v in values[:-1]]).astype(np.int64)
    raw = bytearray(b"".join(values))
    if data.draw(st.booleans()):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    buf = Buf(bytes(raw), "stream")
    want = general_strings(buf, starts)
    found = short_ascii_strings(buf.arr, starts)
    if found is not None:
        assert not isinstance(want, str) and found[0].equals(want[0]) and (found[1] == want[1]).all()
    try:
        got = T.String().column(buf, starts)
        assert got[0].equals(want[0]) and (got[1] == want[1]).all()
    except (StatectlError, ValueError) as e:
        assert str(e) == want


@settings(max_examples=300)
@given(st.lists(st.tuples(st.binary(max_size=40), st.binary(max_size=40)), max_size=30), st.booleans())
def test_extents_are_the_same_exactly_when_their_bytes_are(pairs, compiled):
    """`Extents.same` (compiled, or by numpy's gather while numba is not loaded) is the rows'
    equality."""
    from unittest import mock

    from statectl.statefmt import bytecolumns
    from statectl.statefmt.flink.types.buffer import Extents

    left = Extents.of(pa.array([a for a, _ in pairs], pa.binary()), "a")
    right = Extents.of(pa.array([b for _, b in pairs], pa.binary()), "b")
    with mock.patch.object(bytecolumns, "numba_started", lambda: compiled):
        assert left.same(right) == ([a for a, _ in pairs] == [b for _, b in pairs])
