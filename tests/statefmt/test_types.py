"""Logical types: validation, display, and exact round trips through Arrow."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statectl.statefmt.errors import MetadataError, UsageError
from statectl.statefmt.types import (
    PRIMITIVES,
    from_arrow,
    to_arrow,
    to_spark_ddl,
    type_str,
    validate_type,
)

primitive = st.sampled_from(PRIMITIVES + ("ts_utc", "ts", "decimal")).map(
    lambda p: {"ts_utc": {"timestamp": {"unit": "us", "tz": "UTC"}},
               "ts": {"timestamp": {"unit": "us", "tz": None}},
               "decimal": {"decimal": {"precision": 12, "scale": 3}}}.get(p, p))
field_names = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=8)


def _struct(children):
    return st.lists(st.tuples(field_names, children, st.booleans()), min_size=1, max_size=4,
                    unique_by=lambda f: f[0]).map(
        lambda fs: {"struct": [{"name": n, "type": t, "nullable": nn} for n, t, nn in fs]})


types = st.recursive(
    primitive,
    lambda children: st.one_of(
        children.map(lambda t: {"list": t}),
        st.tuples(st.sampled_from(["string", "int64", "int32", "binary"]), children).map(
            lambda kv: {"map": {"key": kv[0], "value": kv[1]}}),
        _struct(children),
    ),
    max_leaves=8,
)


@given(types)
def test_arrow_round_trip_is_exact(t):
    assert validate_type(t) == t
    assert from_arrow(to_arrow(t)) == t
    assert type_str(t)  # renders
    assert to_spark_ddl(t)


def test_display_forms():
    assert type_str({"map": {"key": "string", "value": {"list": "int64"}}}) == "map<string, list<int64>>"
    assert type_str({"struct": [{"name": "sum", "type": "float64"}, {"name": "n", "type": "int64"}]}) \
        == "struct<sum: float64, n: int64>"
    assert type_str({"timestamp": {"unit": "us", "tz": "UTC"}}) == "timestamp[us, UTC]"
    assert to_spark_ddl({"struct": [{"name": "a`b", "type": "int32", "nullable": False}]}) \
        == "struct<`a``b`: int not null>"


def test_large_arrow_variants_map_to_plain_types():
    assert from_arrow(pa.large_string()) == "string"
    assert from_arrow(pa.large_list(pa.large_binary())) == {"list": "binary"}


@pytest.mark.parametrize("bad, message", [
    ("uint8", "unknown type 'uint8'"),
    ({"list": "nope"}, "unknown type 'nope'"),
    ({"map": {"key": "string"}}, "missing value"),
    ({"struct": []}, "non-empty list"),
    ({"struct": [{"name": "a", "type": "int32"}, {"name": "a", "type": "int32"}]}, "unique"),
    ({"timestamp": {"unit": "ns", "tz": None}}, "unit must be"),
    ({"decimal": {"precision": 50, "scale": 2}}, "precision"),
    ({"list": "int64", "map": "x"}, "one-key object"),
    (5, "one-key object"),
])
def test_malformed_types_are_refused(bad, message):
    with pytest.raises(MetadataError, match=message):
        validate_type(bad)


def test_unsupported_arrow_types_are_refused():
    with pytest.raises(UsageError, match="unsupported column type uint32"):
        from_arrow(pa.uint32())
    with pytest.raises(UsageError, match="microseconds"):
        from_arrow(pa.timestamp("ns"))
    with pytest.raises(UsageError, match="only nulls"):
        from_arrow(pa.null())
