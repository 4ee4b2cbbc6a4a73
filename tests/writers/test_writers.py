"""Writers through the Python API: round trips, errors, derivation, cleanup (real Spark jobs)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import sys
from decimal import Decimal

import pytest
from pyspark import cloudpickle

from statectl.readers import open_savepoint
from statectl.statefmt.errors import MissingFileError, SavepointExistsError, UnknownOperatorError
from statectl.statefmt.formats import load
from statectl.statefmt.validate import validate
from support.savepoint_rows import files_below, keyed_rows, state_rows, timer_rows, tree_digest
from statectl.writers import (
    AggregatingState,
    BroadcastState,
    DuplicateKeyError,
    InputError,
    KeyedData,
    KeyedFunction,
    ListState,
    MapState,
    NullKeyError,
    OperatorData,
    OperatorListState,
    ReducingState,
    SavepointWriter,
    StateDescriptor,
    StateValueError,
    Timers,
    UnionListState,
    ValueState,
    WriteFailedError,
)
from statectl.writers.partitioning import Chunks

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def data(spark):
    events = spark.createDataFrame(
        [("a", 1, "x", 10), ("a", 2, "y", 20), ("b", 3, "z", 30), ("a", 0, "w", 5)],
        "user string, n int, event string, ts long")
    counts = spark.createDataFrame([("a", 5), ("b", 7), ("c", 9)], "user string, cnt long")
    attrs = spark.createDataFrame([("a", "k1", "v1"), ("a", "k2", "v2"), ("c", "k1", "v3")],
                                  "user string, attr string, val string")
    return {"events": events, "counts": counts, "attrs": attrs}


def by_user(rows, drop=("_key_group",)):
    out = {}
    for r in rows:
        r = {k: (dict(v) if k == "attrs" and v is not None else v) for k, v in r.items()
             if k not in drop}
        out[(r.pop("user"), r.pop("namespace", None))] = r
    return out


def proc_operator(data, parallelism=2, **extra) -> OperatorData:
    return OperatorData("proc", parallelism=parallelism, keyed=KeyedData(
        key=["user"], data=data["events"], states=[
            ValueState("count", column="cnt", data=data["counts"]),
            ListState("events", column="event", order_by="ts"),
            MapState("attrs", key_column="attr", value_column="val", data=data["attrs"]),
            ReducingState("total", column="n", function="sum"),
            ReducingState("seen", column="event", function="count"),
            AggregatingState("mean", column="n", function="avg"),
        ], timers=[Timers("event", column="ts")]), **extra)


def test_keyed_state_of_every_kind_round_trips(spark, data, tmp_path):
    out = str(tmp_path / "sp")
    processing = spark.createDataFrame([("a", 100), ("a", 100), ("c", 7)], "user string, at long")
    op = proc_operator(data)
    op = OperatorData("proc", 2, None, KeyedData(
        key=op.keyed.key, data=op.keyed.data, states=op.keyed.states,
        timers=[Timers("event", column="ts"), Timers("processing", column="at", data=processing)]))
    report = SavepointWriter.new(max_parallelism=128).with_operator(op).write(out, spark)

    assert by_user(keyed_rows(out, "proc")) == {
        ("a", None): {"count": 5, "events": ["w", "x", "y"], "attrs": {"k1": "v1", "k2": "v2"},
                      "total": 3, "seen": 3, "mean": {"sum": 3, "count": 3}},
        ("b", None): {"count": 7, "events": ["z"], "attrs": None, "total": 3, "seen": 1,
                      "mean": {"sum": 3, "count": 1}},
        ("c", None): {"count": 9, "events": None, "attrs": {"k1": "v3"}, "total": None,
                      "seen": None, "mean": None},
    }
    timers = sorted((r["user"], r["timestamp"], r["domain"]) for r in timer_rows(out, "proc"))
    assert timers == [("a", 5, "event"), ("a", 10, "event"), ("a", 20, "event"),
                      ("a", 100, "processing"), ("b", 30, "event"), ("c", 7, "processing")]
    sp = load(out)
    proc = sp.operator("proc")
    assert (proc.parallelism, proc.max_parallelism, proc.uid) == (2, 128, "proc")
    assert [(s.name, s.kind, s.value_type, s.user_key_type, s.function)
            for s in proc.keyed.states] == [
        ("count", "value", "int64", None, None),
        ("events", "list", "string", None, None),
        ("attrs", "map", "string", "string", None),
        ("total", "reducing", "int64", None, "sum"),
        ("seen", "reducing", "int64", None, "count"),
        ("mean", "aggregating", {"struct": [{"name": "sum", "type": "int64", "nullable": True},
                                            {"name": "count", "type": "int64", "nullable": True}]},
         None, "avg"),
    ]
    assert [(f.name, f.type) for f in proc.keyed.key] == [("user", "string")]
    assert [o.action for o in report.operators] == ["written"]
    # the same rows through the Spark readers
    reader = open_savepoint(spark, out)
    spark_rows = [r.asDict(recursive=True) for r in reader.keyed("proc").collect()]
    assert by_user(spark_rows) == by_user(keyed_rows(out, "proc"))
    assert sorted((r["user"], r["timestamp"], r["domain"])
                  for r in reader.timers("proc").collect()) == timers
    # only the files of the savepoint and _metadata are left: no markers, no orphans
    referenced = {f.ref.path for _, f in sp.data_files()}
    assert set(files_below(out)) == referenced | {"_metadata"}
    assert validate(out).valid


def test_every_column_type_round_trips_with_composite_and_date_keys(spark, tmp_path):
    schema = ("k1 string, k2 bigint, i int, l bigint, d double, f float, b boolean, s string, "
              "bin binary, dt date, ts timestamp, ntz timestamp_ntz, dec decimal(10,2), "
              "arr array<int>, st struct<a:int,b:string>, m map<string,int>")
    rows = [
        ("x", 1, 7, 2**40, 1.5, 0.25, True, "héllo", b"\x00\x01", dt.date(2024, 2, 29),
         dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), dt.datetime(2024, 1, 2, 3, 4, 5),
         Decimal("12.34"), [1, None, 3], (1, "s"), {"k": 1}),
        ("x", 2, None, None, None, None, None, None, None, None, None, None, None, None, None,
         None),
    ]
    df = spark.createDataFrame(rows, schema)
    value_columns = [c.split(" ")[0] for c in schema.split(", ")[2:]]
    keyed = KeyedData(key=["k1", "k2"], data=df,
                      states=[ValueState(f"v_{c}", column=c) for c in value_columns])
    dated = KeyedData(key=["dt", "i"], data=df.where("dt IS NOT NULL"),
                      states=[ValueState("s", column="s")])
    out = str(tmp_path / "types")
    SavepointWriter.new(max_parallelism=64).with_operator(
        OperatorData("types", 3, keyed=keyed)).with_operator(
        OperatorData("dated", 2, keyed=dated)).write(out, spark)

    got = {(r["k1"], r["k2"]): r for r in keyed_rows(out, "types")}
    first = got[("x", 1)]
    assert {c: first[f"v_{c}"] for c in value_columns} == {
        "i": 7, "l": 2**40, "d": 1.5, "f": 0.25, "b": True, "s": "héllo", "bin": b"\x00\x01",
        "dt": dt.date(2024, 2, 29), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        "ntz": dt.datetime(2024, 1, 2, 3, 4, 5), "dec": Decimal("12.34"), "arr": [1, None, 3],
        "st": {"a": 1, "b": "s"}, "m": [("k", 1)],
    }
    assert all(got[("x", 2)][f"v_{c}"] is None for c in value_columns)
    assert [(r["dt"], r["i"], r["s"]) for r in keyed_rows(out, "dated")] == [
        (dt.date(2024, 2, 29), 7, "héllo")]
    types = {s.name: s.value_type for s in load(out).operator("types").keyed.states}
    assert types["v_ts"] == {"timestamp": {"unit": "us", "tz": "UTC"}}
    assert types["v_ntz"] == {"timestamp": {"unit": "us", "tz": None}}
    assert types["v_dec"] == {"decimal": {"precision": 10, "scale": 2}}


# the per-key functions below run in Spark's Python workers, which cannot import this module
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def bootstrap_fn(key, rows, ctx):
    ctx.value("count").update(rows.num_rows)
    ctx.list("events").add_all(rows.column("event").to_pylist())
    for event, n in zip(rows.column("event").to_pylist(), rows.column("n").to_pylist()):
        ctx.map("attrs").put(event, n)
        ctx.reducing("total").add(n)
        ctx.aggregating("mean").add(n)
        ctx.timer_service.register_event_time_timer(rows.column("ts")[0].as_py())
    ctx.timer_service.register_processing_time_timer(99)
    if key == ("a",):
        ctx.namespace = "w1"
        ctx.value("count").update(-1)
        ctx.timer_service.register_event_time_timer(1)


def test_per_key_function_sets_states_timers_and_namespaces(spark, data, tmp_path):
    out = str(tmp_path / "fn")
    fn = KeyedFunction(key=["user"], data=data["events"], function=bootstrap_fn, order_by=["ts"],
                       namespace_type="string", states=[
                           StateDescriptor("count", "value", "int64"),
                           StateDescriptor("events", "list", "string"),
                           StateDescriptor("attrs", "map", "int32", user_key_type="string"),
                           StateDescriptor("total", "reducing", "int64", function="sum"),
                           StateDescriptor("mean", "aggregating",
                                           {"struct": [{"name": "sum", "type": "int64"},
                                                       {"name": "count", "type": "int64"}]},
                                           function="avg"),
                       ])
    SavepointWriter.new(128).with_operator(OperatorData("fn", 2, keyed=fn)).write(out, spark)
    assert by_user(keyed_rows(out, "fn")) == {
        ("a", None): {"count": 3, "events": ["w", "x", "y"], "attrs": {"w": 0, "x": 1, "y": 2},
                      "total": 3, "mean": {"sum": 3, "count": 3}},
        ("a", "w1"): {"count": -1, "events": None, "attrs": None, "total": None, "mean": None},
        ("b", None): {"count": 1, "events": ["z"], "attrs": {"z": 3}, "total": 3,
                      "mean": {"sum": 3, "count": 1}},
    }
    assert sorted((r["user"], r["namespace"] or "", r["timestamp"], r["domain"])
                  for r in timer_rows(out, "fn")) == [
        ("a", "", 5, "event"), ("a", "", 99, "processing"), ("a", "w1", 1, "event"),
        ("b", "", 30, "event"), ("b", "", 99, "processing")]


def test_operator_list_union_and_broadcast_state(spark, tmp_path):
    offsets = spark.createDataFrame([(i,) for i in range(10)], "offset long")
    members = spark.createDataFrame([("n1",), ("n2",), ("n3",)], "member string")
    rules = spark.createDataFrame([("r1", "p1"), ("r2", "p2"), ("r2", "p3")], "rule string, pattern string")
    out = str(tmp_path / "ops")
    SavepointWriter.new().with_operator(OperatorData("src", 3, operator_states=[
        OperatorListState("offsets", "offset", offsets),
        UnionListState("members", "member", members),
        BroadcastState("rules", "rule", "pattern", rules, combine="max"),
    ])).write(out, spark)
    listed = state_rows(out, "src", "offsets")
    assert sorted(r["value"] for r in listed) == list(range(10))
    per_subtask = [sum(1 for r in listed if r["subtask"] == s) for s in range(3)]
    assert sorted(per_subtask) == [3, 3, 4]  # dealt evenly over the 3 subtasks
    assert sorted(r["value"] for r in state_rows(out, "src", "members")) == ["n1", "n2", "n3"]
    assert sorted((r["key"], r["value"]) for r in state_rows(out, "src", "rules")) == [
        ("r1", "p1"), ("r2", "p3")]
    op = load(out).operator("src")
    assert (op.parallelism, op.max_parallelism) == (3, 128)  # Flink's default for 3
    assert [(s.name, s.kind, s.value_type, s.key_type) for s in op.operator_states] == [
        ("offsets", "list", "int64", None), ("members", "union", "string", None),
        ("rules", "broadcast", "string", "string")]


def write_error(spark, tmp_path, name, op):
    out = str(tmp_path / name)
    with pytest.raises(Exception) as info:
        SavepointWriter.new(128).with_operator(op).write(out, spark)
    assert not os.path.exists(out)  # every file the failed write began is gone, and the folder it made
    return info


def test_a_failed_write_into_a_folder_it_did_not_make_leaves_the_folder(spark, tmp_path):
    out = tmp_path / "given"
    out.mkdir()
    dup = spark.createDataFrame([("a", 1), ("a", 3)], "user string, n long")
    with pytest.raises(DuplicateKeyError):
        SavepointWriter.new(128).with_operator(OperatorData("proc", 2, keyed=KeyedData(
            ["user"], [ValueState("count", "n")], dup))).write(str(out), spark)
    assert out.is_dir() and list(out.iterdir()) == []


def test_bad_input_fails_with_one_clear_error_and_leaves_nothing(spark, data, tmp_path):
    dup = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "user string, n long")
    info = write_error(spark, tmp_path, "dup", OperatorData("proc", 2, keyed=KeyedData(
        ["user"], [ValueState("count", "n")], dup)))
    assert info.type is DuplicateKeyError
    assert str(info.value) == ("operator 'proc', value state 'count': key user=a has 2 rows; a "
                               "value state holds one value per key (set combine to sum, min, "
                               "max or any)")
    info = write_error(spark, tmp_path, "mapdup", OperatorData("proc", 2, keyed=KeyedData(
        ["user"], [MapState("m", "attr", "val")], data["attrs"].union(data["attrs"].limit(1)))))
    assert info.type is DuplicateKeyError
    assert str(info.value) == ("operator 'proc', map state 'm': key user=a has map key k1 twice "
                               "(set combine to sum, min, max or any)")
    nulls = spark.createDataFrame([("a", 1), (None, 2)], "user string, n long")
    info = write_error(spark, tmp_path, "null", OperatorData("proc", 2, keyed=KeyedData(
        ["user"], [ValueState("count", "n")], nulls)))
    assert info.type is NullKeyError
    assert str(info.value) == ("operator 'proc', state 'count': a row has a null in key "
                               "column(s) user; keys may not be null")
    info = write_error(spark, tmp_path, "missing", OperatorData("proc", 2, keyed=KeyedData(
        ["user"], [ValueState("count", "nope")], dup)))
    assert info.type is InputError
    assert str(info.value) == ("operator 'proc', state 'count': missing column(s) 'nope'; the "
                               "input has 'user', 'n'")
    info = write_error(spark, tmp_path, "type", OperatorData("proc", 2, keyed=KeyedData(
        ["user"], [ReducingState("total", "event", "sum")], data["events"])))
    assert info.type is InputError
    assert str(info.value) == ("operator 'proc', state 'total': sum needs a numeric column, but "
                               "'event' has type string")
    info = write_error(spark, tmp_path, "key", OperatorData("proc", 2, keyed=KeyedData(
        ["d"], [ValueState("v", "d")], spark.createDataFrame([(1.5,)], "d double"))))
    assert info.type is InputError
    assert "key column 'd' has type float64, which cannot be a key" in str(info.value)
    bdup = spark.createDataFrame([("r", "1"), ("r", "2")], "k string, v string")
    info = write_error(spark, tmp_path, "bdup", OperatorData("b", 1, operator_states=[
        BroadcastState("rules", "k", "v", bdup)]))
    assert info.type is DuplicateKeyError
    assert str(info.value) == ("operator 'b', broadcast state 'rules': key r appears in 2 rows "
                               "(set combine to sum, min, max or any)")


def test_combine_rules_merge_duplicates(spark, data, tmp_path):
    dup = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "user string, n long")
    attrs = data["attrs"].union(spark.createDataFrame([("a", "k1", "v9")], data["attrs"].schema))
    out = str(tmp_path / "combined")
    SavepointWriter.new(128).with_operator(OperatorData("proc", 2, keyed=KeyedData(["user"], [
        ValueState("count", "n", combine="sum"), ValueState("low", "n", combine="min"),
        MapState("attrs", "attr", "val", data=attrs, combine="max")], dup))).write(out, spark)
    assert by_user(keyed_rows(out, "proc")) == {
        ("a", None): {"count": 4, "low": 1, "attrs": {"k1": "v9", "k2": "v2"}},
        ("b", None): {"count": 2, "low": 2, "attrs": None},
        ("c", None): {"count": None, "low": None, "attrs": {"k1": "v3"}},
    }


def failing_fn(key, rows, ctx):
    if key == ("b",):
        raise ValueError("no b here")
    ctx.value("v").update(1)


def test_a_failed_job_removes_the_files_it_wrote(spark, tmp_path):
    # keys spread over both tasks; the task holding "b" fails after others wrote files
    df = spark.createDataFrame([(f"k{i}",) for i in range(200)] + [("b",)], "user string")
    fn = KeyedFunction(["user"], df, failing_fn, [StateDescriptor("v", "value", "int64")])
    info = write_error(spark, tmp_path, "fail", OperatorData("fn", 2, keyed=fn))
    assert info.type is WriteFailedError
    assert str(info.value).startswith("writing keyed state of fn (per-key function) failed:")
    fn = KeyedFunction(["user"], df, wrong_type_fn, [StateDescriptor("v", "value", "int64")])
    info = write_error(spark, tmp_path, "type", OperatorData("fn", 2, keyed=fn))
    assert info.type is StateValueError
    assert str(info.value).startswith("operator 'fn': a value set for 'v' does not fit its type "
                                      "int64:")


def wrong_type_fn(key, rows, ctx):
    ctx.value("v").update("not a number")


def test_leftovers_of_a_dead_write_are_removed_by_the_next(spark, data, tmp_path):
    out = tmp_path / "again"
    (out / "576dd1d1f766474368806deb544ded87").mkdir(parents=True)
    leftover = out / "576dd1d1f766474368806deb544ded87" / "keyed-0-63-w0123456789ab-x.parquet"
    leftover.write_bytes(b"partial")
    (out / "_writing-w0123456789ab.json").write_text(json.dumps(
        {"write_id": "0123456789ab", "host": socket.gethostname(), "pid": 2**22 + 12345}))
    report = SavepointWriter.new(128).with_operator(proc_operator(data)).write(str(out), spark)
    assert report.removed_leftovers == 1
    assert not leftover.exists() and not (out / "_writing-w0123456789ab.json").exists()
    with pytest.raises(SavepointExistsError):
        SavepointWriter.new(128).with_operator(proc_operator(data)).write(str(out), spark)


@pytest.fixture(scope="module")
def base(spark, data, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("base") / "sp")
    rules = spark.createDataFrame([("r1", "p1")], "rule string, pattern string")
    offsets = spark.createDataFrame([(1,), (2,)], "offset long")
    SavepointWriter.new(128).with_operator(proc_operator(data)).with_operator(
        OperatorData("src", 2, operator_states=[OperatorListState("offsets", "offset", offsets)])
    ).with_operator(OperatorData("bcast", 1, operator_states=[
        BroadcastState("rules", "rule", "pattern", rules)])).write(out, spark)
    return out


def test_modify_removes_and_renames_with_shallow_copies(base, tmp_path):
    before = tree_digest(base)
    out = str(tmp_path / "modified")
    report = SavepointWriter.from_existing(base).remove_operator("src").rename_operator(
        "bcast", "rules-op").write(out)
    sp, base_sp = load(out), load(base)
    assert [op.uid for op in sp.operators] == ["proc", "rules-op"]
    assert [(o.uid, o.action) for o in report.operators] == [
        ("proc", "shallow copy"), ("rules-op", "renamed")]
    assert report.removed == ["src"]
    assert [e.savepoint_id for e in sp.lineage] == [base_sp.savepoint_id]
    for op, f in sp.data_files():  # every file points at the base's file, where it lies
        assert f.ref.savepoint == base_sp.savepoint_id
        assert f.ref.path in before
    assert files_below(out) == ["_metadata"]
    assert sorted(by_user(keyed_rows(out, "proc"))) == [("a", None), ("b", None), ("c", None)]
    assert state_rows(out, "rules-op", "rules") == [{"key": "r1", "value": "p1"}]
    assert tree_digest(base) == before  # the base is never written to
    with pytest.raises(UnknownOperatorError) as info:
        SavepointWriter.from_existing(base).remove_operator("nope")
    assert str(info.value) == "no operator with uid 'nope'; operators: proc, src, bcast"


def test_bootstrap_on_a_base_replaces_adds_and_shares_the_rest(spark, base, tmp_path):
    before = tree_digest(base)
    new = spark.createDataFrame([("z", 1)], "user string, n long")
    out = str(tmp_path / "derived")
    writer = SavepointWriter.from_existing(base).with_operator(OperatorData(
        "proc", 2, keyed=KeyedData(["user"], [ValueState("n", "n")], new))).with_operator(
        OperatorData("extra", 1, keyed=KeyedData(["user"], [ValueState("n", "n")], new)))
    writer.write(out, spark)
    sp, base_sp = load(out), load(base)
    assert [op.uid for op in sp.operators] == ["proc", "src", "bcast", "extra"]
    assert sp.operator("proc").max_parallelism == 128  # kept from the replaced operator
    assert [r["n"] for r in keyed_rows(out, "proc")] == [1]
    for op, f in sp.data_files():
        shared = op.uid in ("src", "bcast")
        assert (f.ref.savepoint == base_sp.savepoint_id) == shared
    assert tree_digest(base) == before

    # the derived savepoint depends on the base: gone base -> validate and reading fail clearly
    moved = str(tmp_path / "moved-base")
    shutil.move(base, moved)
    try:
        report = validate(out)
        assert not report.valid
        assert report.problems[0] == (f"savepoint {base_sp.savepoint_id} at {base_sp.location}, "
                                      "which this one references, is gone")
        with pytest.raises(MissingFileError):
            state_rows(out, "src", "offsets")
        assert [r["n"] for r in keyed_rows(out, "proc")] == [1]  # its own files still read
    finally:
        shutil.move(moved, base)


def test_self_contained_output_survives_the_base(spark, base, tmp_path):
    copy = str(tmp_path / "base-copy")
    shutil.copytree(base, copy)
    derived = str(tmp_path / "derived")
    SavepointWriter.from_existing(copy).remove_operator("bcast").write(derived)
    standalone = str(tmp_path / "standalone")
    report = SavepointWriter.from_existing(derived).write(standalone, self_contained=True)
    assert report.copied_files == len(list(load(derived).data_files()))
    shutil.rmtree(copy)
    sp = load(standalone)
    assert sp.lineage == ()
    assert all(not f.ref.is_shared for _, f in sp.data_files())
    assert validate(standalone).valid
    assert sorted(r["value"] for r in state_rows(standalone, "src", "offsets")) == [1, 2]
    assert by_user(keyed_rows(standalone, "proc"))[("b", None)]["count"] == 7


def test_chunk_tags_send_each_chunk_to_its_own_partition(spark):
    chunks = Chunks.plan(max_parallelism=128, parallelism=3, target_tasks=7)
    df = spark.range(128).selectExpr("CAST(id AS INT) AS g").selectExpr(
        "g", f"{chunks.chunk_sql('g')} AS chunk", f"{chunks.tag_sql('g')} AS tag")
    rows = df.repartition(chunks.count, "tag").selectExpr(
        "g", "chunk", "spark_partition_id() AS p").collect()
    assert all(r["chunk"] == r["p"] == chunks.chunk_of(r["g"]) for r in rows)
    assert [lo for lo, _ in chunks.ranges] == sorted(lo for lo, _ in chunks.ranges)
