"""The vectorised encoding equals the scalar codec, byte for byte, for any input."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.logical_values import KEY_TYPES, logical, types, values

from statectl.statefmt.errors import UsageError
from statectl.statefmt.rocksdb import columnar
from statectl.statefmt.rocksdb.codec import KeyLayout, ValueCodec, key_group_prefix, \
    put_varint, sortable_int, timer_key
from statectl.statefmt.types import to_arrow

# a logical type and up to 6 values of it, some null
typed_columns = types().flatmap(
    lambda t: st.tuples(st.just(logical(t)), st.lists(values(t, nullable=True), max_size=6)))


def _arrow(t, vs, slice_from=0):
    """The values as an Arrow array; *slice_from* > 0 makes it a slice (offsets not at 0)."""
    padding = [None] * slice_from
    return pa.array(padding + vs, to_arrow(t)).slice(slice_from)


@settings(max_examples=400)
@given(typed_columns, st.integers(0, 2))
def test_encode_equals_the_scalar_codec(tc, slice_from):
    t, vs = tc
    codec = ValueCodec(t)
    got = columnar.encode(_arrow(t, vs, slice_from), t).to_pylist()
    assert got == [None if v is None else codec.encode(v) for v in vs]


@settings(max_examples=300)
@given(typed_columns)
def test_nullable_equals_the_scalar_codec(tc):
    t, vs = tc
    codec = ValueCodec(t, nullable=True)
    assert columnar.nullable(_arrow(t, vs), t).to_pylist() == [codec.encode(v) for v in vs]


@settings(max_examples=300)
@given(types().flatmap(lambda t: st.tuples(
    st.just(logical(t)),
    st.lists(st.one_of(st.none(), st.lists(values(t, nullable=True), max_size=4)), max_size=6))),
    st.integers(0, 2))
def test_list_entries_concatenate_nullable_elements(tc, slice_from):
    t, lists = tc
    codec = ValueCodec(t, nullable=True)
    arr = _arrow({"list": t}, lists, slice_from)
    want = [b"".join(codec.encode(v) for v in vs) if vs else None for vs in lists]
    assert columnar.list_entries(arr, t).to_pylist() == want


@settings(max_examples=300)
@given(st.integers(0, 2 ** 64 - 1).flatmap(lambda _: st.lists(st.integers(0, 2 ** 64 - 1), max_size=8)))
def test_varints_equal_put_varint(ns):
    want = []
    for n in ns:
        out = bytearray()
        put_varint(n, out)
        want.append(bytes(out))
    assert columnar.varints(np.array(ns, dtype=np.uint64)).to_pylist() == want


key_columns = st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=3).flatmap(
    lambda ts: st.tuples(st.just(ts), st.lists(st.tuples(*[values(t) for t in ts]), min_size=1,
                                               max_size=5)))
namespaces = st.one_of(st.none(), st.sampled_from(["string", "int64", "ts"]))


@settings(max_examples=300)
@given(key_columns, namespaces, st.data())
def test_keys_and_timer_keys_equal_the_key_layout(kc, ns_type, data):
    key_types, rows = kc
    ns_t = logical(ns_type) if ns_type else None
    layout = KeyLayout(key_types, ns_t)
    n = len(rows)
    keys = [pa.array([r[i] for r in rows], to_arrow(t)) for i, t in enumerate(key_types)]
    spaces = data.draw(st.lists(values(ns_type, nullable=True), min_size=n, max_size=n)) \
        if ns_type else None
    kns = columnar.key_ns(layout, keys, pa.array(spaces, to_arrow(ns_t)) if ns_type else None)
    want = [layout.key_bytes(r) + layout.namespace_bytes(spaces[i] if spaces else None)
            for i, r in enumerate(rows)]
    assert kns.to_pylist() == want

    groups = data.draw(st.lists(st.integers(0, 32767), min_size=n, max_size=n))
    prefixed = columnar.join(columnar.key_group_prefixes(np.array(groups)), kns)
    assert prefixed.to_pylist() == [key_group_prefix(g) + w for g, w in zip(groups, want)]

    domains = data.draw(st.lists(st.sampled_from(["event", "processing"]), min_size=n, max_size=n))
    stamps = data.draw(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=n, max_size=n))
    timers = columnar.timer_keys(np.array(groups), pa.array(domains), np.array(stamps, np.int64), kns)
    assert timers.to_pylist() == [timer_key(g, d, ts, w)
                                  for g, d, ts, w in zip(groups, domains, stamps, want)]


def test_sortable_ints_match_for_every_width():
    for width, t in ((1, np.int8), (2, np.int16), (4, np.int32), (8, np.int64)):
        info = np.iinfo(t)
        vs = [int(info.min), -1, 0, 1, int(info.max)]
        assert columnar.sortable_ints(np.array(vs, t), width).to_pylist() == \
            [sortable_int(v, width) for v in vs]


def test_a_null_key_is_a_usage_error():
    layout = KeyLayout(["string"], None)
    with pytest.raises(UsageError, match="^key columns may not be null$"):
        columnar.key_ns(layout, [pa.array(["a", None])], None)
