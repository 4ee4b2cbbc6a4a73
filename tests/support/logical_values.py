"""Hypothesis strategies for statectl's logical types (docs/FORMAT.md) and their values: every
primitive, timestamps with and without a zone, decimals, and lists, maps and structs of them
nested up to a depth; KEY_TYPES are the types a key may have."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hypothesis import strategies as st

UTC = dt.timezone.utc

PRIMITIVES = {
    "bool": st.booleans(),
    "int8": st.integers(-2 ** 7, 2 ** 7 - 1),
    "int16": st.integers(-2 ** 15, 2 ** 15 - 1),
    "int32": st.integers(-2 ** 31, 2 ** 31 - 1),
    "int64": st.integers(-2 ** 63, 2 ** 63 - 1),
    "float32": st.floats(width=32, allow_nan=False),
    "float64": st.floats(allow_nan=False),
    "string": st.text(),
    "binary": st.binary(),
    "date32": st.dates(),
}


KEY_TYPES = ["bool", "int8", "int16", "int32", "int64", "string", "binary", "date32"]


def types(depth=2):
    leaves = st.sampled_from(list(PRIMITIVES) + ["ts_utc", "ts", "dec"])
    if depth == 0:
        return leaves
    inner = types(depth - 1)
    return st.one_of(
        leaves,
        inner.map(lambda t: ("list", t)),
        st.tuples(st.sampled_from(KEY_TYPES), inner).map(lambda kv: ("map",) + kv),
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: ("struct", tuple(ts))),
    )


def logical(t):
    if t == "ts_utc":
        return {"timestamp": {"unit": "us", "tz": "UTC"}}
    if t == "ts":
        return {"timestamp": {"unit": "us", "tz": None}}
    if t == "dec":
        return {"decimal": {"precision": 20, "scale": 4}}
    if isinstance(t, str):
        return t
    if t[0] == "list":
        return {"list": logical(t[1])}
    if t[0] == "map":
        return {"map": {"key": logical(t[1]), "value": logical(t[2])}}
    return {"struct": [{"name": f"f{i}", "type": logical(x)} for i, x in enumerate(t[1])]}


def values(t, nullable=False):
    if t == "ts_utc" or t == "ts":
        base = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
        strat = base.map(lambda d: d.replace(tzinfo=UTC)) if t == "ts_utc" else base
    elif t == "dec":
        strat = st.integers(-10 ** 20 + 1, 10 ** 20 - 1).map(lambda i: Decimal(i).scaleb(-4))
    elif isinstance(t, str):
        strat = PRIMITIVES[t]
    elif t[0] == "list":
        strat = st.lists(values(t[1], True), max_size=4)
    elif t[0] == "map":
        strat = st.dictionaries(values(t[1]), values(t[2], True), max_size=4).map(
            lambda d: list(d.items()))
    else:
        strat = st.tuples(*[values(x, True) for x in t[1]]).map(
            lambda vs: {f"f{i}": v for i, v in enumerate(vs)})
    return st.one_of(st.none(), strat) if nullable else strat
