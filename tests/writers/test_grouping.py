"""Value and list state grouped per key inside the writing tasks (statectl.writers.own.grouping).

The task-side grouping must give exactly what Spark's aggregate plan gives:
the same rows, and the same error naming the same key.
"""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.savepoint_rows import keyed_rows
from statectl.writers import (
    DuplicateKeyError,
    KeyedData,
    ListState,
    OperatorData,
    ReducingState,
    SavepointWriter,
    ValueState,
)
from statectl.statefmt.vocabulary import StateKind
from statectl.writers.own.grouping import GroupedState, TaskGrouping, key_repr

GROUPING = TaskGrouping(
    group_columns=("_key_group", "k", "namespace"), key=("k",), tag_column="_tag",
    states=(GroupedState("v", StateKind.VALUE, "_s0_v", 0, "operator 'p', value state 'v'"),
            GroupedState("l", StateKind.LIST, "_s1_v", 1, "operator 'p', list state 'l'")))


SCHEMA = pa.schema([("_key_group", pa.int32()), ("k", pa.string()), ("namespace", pa.int64()),
                    ("_tag", pa.int32()), ("_s0_v", pa.int64()), ("_s1_v", pa.string())])


def _expected(rows):
    """The keyed table built row by row, the plain way."""
    out = {}
    for r in rows:
        group = out.setdefault((r["_key_group"], r["k"], r["namespace"]), {"v": [], "l": []})
        if r["_tag"] == 0:
            group["v"].append(r["_s0_v"])
        elif r["_s1_v"] is not None:
            group["l"].append(r["_s1_v"])
    return [{"_key_group": g, "k": k, "namespace": ns, "v": s["v"][0] if s["v"] else None,
             "l": s["l"] or None} for (g, k, ns), s in out.items()]


row = st.fixed_dictionaries({
    "_key_group": st.integers(0, 3), "k": st.sampled_from(["a", "b", "c"]),
    "namespace": st.one_of(st.none(), st.integers(0, 1)), "_tag": st.integers(0, 1),
    "_s0_v": st.one_of(st.none(), st.integers(-5, 5)),
    "_s1_v": st.one_of(st.none(), st.text(max_size=3)),
})


@settings(max_examples=300)
@given(st.lists(row, max_size=40), st.randoms(use_true_random=False))
def test_runs_split_over_any_batches_group_like_row_by_row(rows, rnd):
    rows.sort(key=lambda r: (r["_key_group"], r["k"], r["namespace"] is not None,
                             r["namespace"] or 0))
    # a value state sees one row per key here; duplicates are tested below
    seen, unique = set(), []
    for r in rows:
        key = (r["_key_group"], r["k"], r["namespace"])
        if r["_tag"] == 0 and key in seen:
            continue
        seen.add(key) if r["_tag"] == 0 else None
        unique.append(r)
    schema = SCHEMA
    table = pa.Table.from_pylist(unique, schema=schema)
    cuts = sorted(rnd.sample(range(len(unique) + 1), rnd.randint(0, len(unique))))
    bounds = [0, *cuts, len(unique)]
    batches = [b for lo, hi in zip(bounds, bounds[1:])
               for b in (table.slice(lo, hi - lo).to_batches() or [pa.record_batch(
                   [pa.array([], f.type) for f in schema], schema=schema)])]
    got = [r for t in GROUPING.tables(batches) for r in t.to_pylist()]
    assert got == _expected(unique)


def test_a_value_state_given_two_rows_names_the_key():
    table = pa.Table.from_pylist(
        [{"_key_group": 1, "k": "a", "namespace": None, "_tag": 0, "_s0_v": 1, "_s1_v": None},
         {"_key_group": 1, "k": "a", "namespace": None, "_tag": 0, "_s0_v": 2, "_s1_v": None}],
        schema=SCHEMA)
    with pytest.raises(DuplicateKeyError) as e:
        list(GROUPING.tables(table.to_batches(max_chunksize=1)))
    assert str(e.value) == ("operator 'p', value state 'v': key k=a has 2 rows; a value state "
                            "holds one value per key (set combine to sum, min, max or any)")


KEY_TYPES = [
    ("string", "s string", ["x", "é y"]),
    ("int", "s int", [1, -7]),
    ("bigint", "s bigint", [2**40, -1]),
    ("boolean", "s boolean", [True, False]),
    ("date", "s date", [dt.date(2024, 2, 29), dt.date(1969, 12, 31)]),
    ("timestamp", "s timestamp",
     [dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=dt.timezone.utc),
      dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)]),
    ("binary", "s binary", [b"ab", b"\x00z"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, ddl, keys", KEY_TYPES, ids=[k[0] for k in KEY_TYPES])
def test_both_plans_name_a_duplicate_key_alike(spark, tmp_path, name, ddl, keys):
    rows = [(keys[0], 1, 7), (keys[1], 2, 7), (keys[1], 3, 7)]
    df = spark.createDataFrame(rows, f"{ddl}, v long, t long")
    messages = []
    for extra in ([], [ReducingState("total", "t", "sum")]):  # task grouping, Spark aggregate
        op = OperatorData("p", 2, keyed=KeyedData(["s", "v"], [ValueState("t", "t"), *extra], df))
        op_dup = OperatorData("p", 2, keyed=KeyedData(["s"], [ValueState("t", "t"), *extra], df))
        SavepointWriter.new(128).with_operator(op).write(str(tmp_path / f"ok{len(extra)}"), spark)
        with pytest.raises(DuplicateKeyError) as e:
            SavepointWriter.new(128).with_operator(op_dup).write(
                str(tmp_path / f"dup{len(extra)}"), spark)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("operator 'p', value state 't': key s=")
    assert key_repr({"s": pa.scalar(keys[0])}).startswith("s=")


def test_both_plans_write_the_same_rows(spark, tmp_path):
    rnd = random.Random(5)
    events = [(f"u{rnd.randrange(300)}", rnd.choice([None, f"e{i}"]), rnd.randrange(3))
              for i in range(3000)]
    firsts = {}
    for user, _, ns in events:
        firsts.setdefault((user, ns), len(firsts))
    counts = [(user, ns, n if n % 4 else None) for (user, ns), n in firsts.items()]
    ev = spark.createDataFrame(events, "user string, event string, ns int")
    cn = spark.createDataFrame(counts, "user string, ns int, n long")
    tables = []
    for extra in ([], [ReducingState("total", "n", "count", data=cn)]):
        keyed = KeyedData(["user"], [ValueState("n", "n", data=cn), ListState("events", "event"),
                                     *extra], ev, namespace="ns")
        out = str(tmp_path / f"sp{len(extra)}")
        SavepointWriter.new(64).with_operator(OperatorData("p", 3, keyed=keyed)).write(out, spark)
        tables.append(sorted(
            (r["_key_group"], r["user"], r["namespace"], r["n"],
             tuple(sorted(r["events"])) if r["events"] is not None else None)
            for r in keyed_rows(out, "p")))
    assert tables[0] == tables[1]
    assert len(tables[0]) == len(firsts)


def test_timers_repeated_across_batches_are_kept_once():
    timers = TaskGrouping(("_key_group", "k", "timestamp", "domain"), ("k",), "_tag", ())
    rows = [(1, "a", 5, "event"), (1, "a", 5, "event"), (1, "a", 5, "processing"),
            (1, "a", 7, "event"), (1, "a", 7, "event"), (2, "b", 7, "event")]
    table = pa.table({name: [r[i] for r in rows] for i, name in enumerate(timers.group_columns)})
    got = [r for t in timers.tables(table.to_batches(max_chunksize=2)) for r in t.to_pylist()]
    assert [tuple(r.values()) for r in got] == sorted(set(rows))
