"""Properties of the backends' binary encoding: exact round trips, self-delimiting, ordered."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.rocksdb.codec import (
    KeyLayout,
    ValueCodec,
    key_group_prefix,
    sortable_int,
    split_timer,
    timer_key,
)
from statectl.statefmt.errors import DataFileError, UsageError
from statectl.statefmt.types import to_arrow
from support.logical_values import logical, types, values

UTC = dt.timezone.utc


typed_values = types().flatmap(lambda t: st.tuples(st.just(logical(t)), values(t)))


@settings(max_examples=300)
@given(typed_values)
def test_round_trip_is_exact_and_matches_arrow(tv):
    t, v = tv
    codec = ValueCodec(t)
    data = codec.encode(v)
    back = codec.decode(data)
    assert back == v
    # the decoded value is what Arrow itself yields for the type
    assert pa.array([back], to_arrow(t)).to_pylist() == [v]


@settings(max_examples=200)
@given(st.lists(typed_values, min_size=1, max_size=4))
def test_concatenated_values_parse_back(tvs):
    """Self-delimiting: encodings laid end to end decode one by one."""
    data = b"".join(ValueCodec(t).encode(v) for t, v in tvs)
    pos = 0
    for t, v in tvs:
        got, pos = ValueCodec(t).decode_at(data, pos)
        assert got == v
    assert pos == len(data)


@given(st.integers(-2 ** 63, 2 ** 63 - 1), st.integers(-2 ** 63, 2 ** 63 - 1))
def test_integers_sort_as_bytes(a, b):
    assert (a < b) == (sortable_int(a, 8) < sortable_int(b, 8))


key_strategy = st.tuples(st.text(max_size=5), st.integers(-2 ** 31, 2 ** 31 - 1))
ns_strategy = st.one_of(st.none(), st.integers(-5, 5))


@given(st.integers(0, 32767), key_strategy, ns_strategy, key_strategy, ns_strategy)
def test_key_layout_is_prefix_free(kg, k1, n1, k2, n2):
    layout = KeyLayout(["string", "int32"], "int64")
    a = key_group_prefix(kg) + layout.key_bytes(k1) + layout.namespace_bytes(n1)
    b = key_group_prefix(kg) + layout.key_bytes(k2) + layout.namespace_bytes(n2)
    assert layout.split(a)[:3] == (kg, k1, n1)
    assert layout.split(a)[3] == len(a)
    if (k1, n1) != (k2, n2):
        assert not b.startswith(a) and not a.startswith(b)


@given(st.integers(0, 32767), st.sampled_from(["event", "processing"]),
       st.integers(-2 ** 63, 2 ** 63 - 1), key_strategy, ns_strategy)
def test_timer_keys_round_trip(kg, domain, ts, key, ns):
    layout = KeyLayout(["string", "int32"], "int64")
    entry = timer_key(kg, domain, ts, layout.key_bytes(key) + layout.namespace_bytes(ns))
    assert split_timer(layout, entry) == (kg, domain, ts, key, ns)


def test_bad_values_and_bytes_are_clear_errors():
    with pytest.raises(UsageError, match="does not fit in 8 bits"):
        ValueCodec("int8").encode(300)
    with pytest.raises(UsageError, match="expected a string"):
        ValueCodec("string").encode(b"x")
    with pytest.raises(UsageError, match="does not fit decimal"):
        ValueCodec({"decimal": {"precision": 3, "scale": 1}}).encode(Decimal("1.25"))
    with pytest.raises(UsageError, match="no field"):
        ValueCodec({"struct": [{"name": "a", "type": "int8"}]}).encode({"b": 1})
    with pytest.raises(DataFileError, match="corrupt"):
        ValueCodec("string").decode(b"\x05ab")
    with pytest.raises(DataFileError, match="trailing"):
        ValueCodec("int8").decode(b"\x80\x00")
    with pytest.raises(UsageError, match="no namespace"):
        KeyLayout(["int64"], None).namespace_bytes(3)
