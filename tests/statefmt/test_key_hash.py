"""The key hash: pure Python equals Spark's own expression, for every key type."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import KeyTypeError
from statectl.statefmt.keygroups import check_key_type, hash_key, key_group_for_key, key_group_sql

UTC_TS = {"timestamp": {"unit": "us", "tz": "UTC"}}
NAIVE_TS = {"timestamp": {"unit": "us", "tz": None}}

# (logical type, Spark DDL, values) for every key type.
KEY_TYPES = [
    ("bool", "boolean", st.booleans()),
    ("int8", "tinyint", st.integers(-128, 127)),
    ("int16", "smallint", st.integers(-(2**15), 2**15 - 1)),
    ("int32", "int", st.integers(-(2**31), 2**31 - 1)),
    ("int64", "bigint", st.integers(-(2**63), 2**63 - 1)),
    ("string", "string", st.text(max_size=40)),
    ("binary", "binary", st.binary(max_size=40)),
    ("date32", "date", st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (UTC_TS, "timestamp", st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30),
                                       timezones=st.just(dt.timezone.utc))),
    (NAIVE_TS, "timestamp_ntz", st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30))),
]
# Each example is a batch of (keys, max parallelism) cases, all compared in one Spark job.
FAST = settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow])


def _cases(keys):
    return st.lists(st.tuples(st.lists(keys, min_size=1, max_size=30), st.integers(1, 32768)),
                    min_size=1, max_size=6)


def _spark_key_groups(spark, cases, ddl, columns) -> list[list[int]]:
    """Spark's key group of each key of each (rows, max parallelism) case, in one job."""
    frames = [spark.createDataFrame([(j, *row) for j, row in enumerate(rows)], f"_j int, {ddl}")
              .selectExpr(f"{i} AS _case", "_j", f"{key_group_sql(columns, max_p)} AS _group")
              for i, (rows, max_p) in enumerate(cases)]
    union = frames[0]
    for df in frames[1:]:
        union = union.unionByName(df)
    out = [[None] * len(rows) for rows, _ in cases]
    for case, j, group in union.collect():
        out[case][j] = group
    return out


@pytest.mark.parametrize("logical, ddl, values", KEY_TYPES, ids=[t[1] for t in KEY_TYPES])
def test_python_key_group_equals_spark_for_each_type(spark, logical, ddl, values):
    @FAST
    @given(_cases(values))
    def check(cases):
        got = _spark_key_groups(spark, [([(k,) for k in keys], max_p) for keys, max_p in cases], f"k {ddl}", ["k"])
        assert got == [[key_group_for_key([k], [logical], max_p) for k in keys] for keys, max_p in cases]

    check()


def test_python_key_group_equals_spark_for_composite_keys(spark):
    @FAST
    @given(_cases(st.tuples(st.integers(-(2**31), 2**31 - 1), st.text(max_size=10), st.binary(max_size=5),
                            st.booleans())))
    def check(cases):
        ddl = "a int, `b c` string, d binary, e boolean"
        got = _spark_key_groups(spark, cases, ddl, ["a", "b c", "d", "e"])
        types = ["int32", "string", "binary", "bool"]
        assert got == [[key_group_for_key(list(k), types, max_p) for k in keys] for keys, max_p in cases]

    check()


def test_hash_known_values():
    # Values Spark printed for SELECT xxhash64(...) (seed 42).
    assert hash_key([5], ["int16"]) == 504019808641096632
    assert hash_key(["héllo"], ["string"]) == 501425390238239234
    assert hash_key([2**40], ["int64"]) == 1821704621099523357


def test_key_group_is_never_negative():
    for i in range(-1000, 1000):
        assert 0 <= key_group_for_key([i], ["int64"], 7) < 7


@pytest.mark.parametrize("bad", ["float64", "float32", {"list": "int64"},
                                 {"decimal": {"precision": 5, "scale": 2}}])
def test_unhashable_key_types_are_refused(bad):
    with pytest.raises(KeyTypeError, match="cannot be a key"):
        check_key_type(bad, "k")
