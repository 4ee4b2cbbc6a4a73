"""Writers in the native format: one RocksDB database per subtask, read and restored like canonical."""

from __future__ import annotations

import datetime as dt
import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark import cloudpickle

from statectl.readers import open_savepoint
from support.restore_checks import BOOT_TIMERS, ROWS_DDL, boot_states, expected, restored, rows
from statectl.backends import HeapBackend, RocksDBBackend
from statectl.statefmt.errors import UsageError
from statectl.statefmt.rocksdb.files import subtask_databases
from statectl.statefmt.formats import load
from statectl.statefmt.validate import validate
from support import REPO
from support.cli_runner import statectl
from statectl.writers import (
    AggregatingState,
    KeyedData,
    KeyedFunction,
    OperatorData,
    OperatorListState,
    SavepointWriter,
    StateDescriptor,
    ValueState,
    WriteFailedError,
)

MAX_P = 64
UTC = dt.timezone.utc


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # functions run in workers


def count_fn(key, rows, ctx):
    ctx.value("n").update(rows.num_rows)
    ctx.list("vs").add_all(rows.column("v").to_pylist())
    ctx.namespace = "w"
    ctx.map("m").put("last", rows.column("v")[-1].as_py())
    ctx.timer_service.register_processing_time_timer(rows.column("ts")[0].as_py())


def operators(spark):
    df = spark.createDataFrame(rows(), ROWS_DDL)
    keyed = KeyedData(key=["user"], data=df, timers=BOOT_TIMERS,
                      states=[*boot_states(), AggregatingState("mean", column="v", function="avg")])
    offsets = spark.createDataFrame([(i,) for i in range(5)], "offset long")
    types = spark.createDataFrame([
        ("x", 1, 2.5, True, b"\x00\x01", dt.date(2024, 2, 29),
         dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), Decimal("-12.34"), [1, None], (1, "s")),
        ("x", -2, None, None, None, None, None, None, None, None),
    ], "k1 string, k2 bigint, d double, b boolean, bin binary, dt date, ts timestamp, "
       "dec decimal(10,2), arr array<int>, st struct<a:int,b:string>")
    columns = ["d", "b", "bin", "dt", "ts", "dec", "arr", "st"]
    fn = KeyedFunction(["user"], df, count_fn, order_by=["v"], namespace_type="string", states=[
        StateDescriptor("n", "value", "int64"), StateDescriptor("vs", "list", "int64"),
        StateDescriptor("m", "map", "int64", user_key_type="string")])
    return [
        OperatorData("boot", parallelism=3, keyed=keyed,
                     operator_states=[OperatorListState("offsets", column="offset", data=offsets)]),
        OperatorData("types", parallelism=2, keyed=KeyedData(
            key=["k1", "k2"], data=types, states=[ValueState(f"v_{c}", column=c) for c in columns])),
        OperatorData("fn", parallelism=2, keyed=fn),
    ]


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    """The same operators written in each format: {format: savepoint}."""
    base = tmp_path_factory.mktemp("native-write")
    out = {}
    for fmt in ("canonical", "rocksdb"):
        writer = SavepointWriter.new(max_parallelism=MAX_P, format=fmt)
        for op in operators(spark):
            writer.with_operator(op)
        writer.write(str(base / fmt), spark)
        out[fmt] = load(base / fmt)
    return out


def collected(df) -> list:
    return sorted((json.dumps(_plain(r.asDict(recursive=True)), sort_keys=True, default=str)
                   for r in df.collect()))


def _plain(value):
    """Maps compare as sets of entries (the encoding orders map keys, Spark keeps input order)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_a_key_with_only_null_states_is_absent_in_native(spark, both):
    rows = open_savepoint(spark, both["rocksdb"].location).keyed("types").collect()
    assert [(r["k1"], r["k2"]) for r in rows] == [("x", 1)]


def test_native_metadata_has_one_database_per_subtask(both):
    sp = both["rocksdb"]
    boot = sp.operator("boot")
    assert boot.format == "rocksdb" and not boot.keyed.timers
    assert sorted(subtask_databases(boot)) == [(0, 21), (22, 42), (43, 63)]
    assert all(f.name for f in boot.keyed.files)
    assert sum(f.rows for f in boot.keyed.files if f.name.endswith(".sst")) > 0
    # operator states stay canonical Parquet files
    assert boot.operator_states[0].files and all(
        f.name is None and f.ref.path.endswith(".parquet") for f in boot.operator_states[0].files)
    report = validate(sp.location)
    assert report.valid, report.problems


@pytest.mark.parametrize("uid", ["boot", "types", "fn"])
def test_both_formats_read_into_identical_tables(spark, both, uid):
    canonical = open_savepoint(spark, both["canonical"].location)
    native = open_savepoint(spark, both["rocksdb"].location)
    # a (key, namespace) whose states are all null has no entry in RocksDB (nor in a backend)
    states = [s.name for s in both["canonical"].operator(uid).keyed.states]
    present = " OR ".join(f"`{s}` IS NOT NULL" for s in states)
    assert collected(native.keyed(uid)) == collected(canonical.keyed(uid).where(present))
    assert native.keyed(uid).schema == canonical.keyed(uid).schema
    if uid != "types":
        assert collected(native.timers(uid)) == collected(canonical.timers(uid))
        assert native.timers(uid).count() > 0
    assert collected(native.operator_state("boot", "offsets")) == \
        collected(canonical.operator_state("boot", "offsets"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", [HeapBackend, RocksDBBackend], ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 3, 5])
def test_native_savepoint_restores_by_key_group(both, backend, parallelism):
    got, timers = restored(both["rocksdb"], backend, parallelism)
    assert got == expected()
    assert timers == {(u, ts) for u, _, _, ts in rows()}


def failing_fn(key, rows, ctx):
    if key == ("u7",):
        raise ValueError("no u7 here")
    ctx.value("v").update(1)


def test_a_failed_native_write_leaves_nothing(spark, tmp_path):
    df = spark.createDataFrame([(f"u{i}",) for i in range(100)], "user string")
    fn = KeyedFunction(["user"], df, failing_fn, [StateDescriptor("v", "value", "int64")])
    out = tmp_path / "fail"
    with pytest.raises(WriteFailedError):
        SavepointWriter.new(max_parallelism=MAX_P, format="rocksdb").with_operator(
            OperatorData("fn", 2, keyed=fn)).write(str(out), spark)
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_an_unknown_format_is_one_clear_error():
    with pytest.raises(UsageError, match="unknown physical format 'lsm'; use canonical, rocksdb or flink"):
        SavepointWriter.new(format="lsm")


@pytest.mark.slow
def test_cli_bootstrap_rocksdb_reads_like_canonical(tmp_path):
    spec = str(Path(REPO) / "examples" / "spec.yaml")
    lines = {}
    for fmt in ("canonical", "rocksdb"):
        out = str(tmp_path / fmt)
        done = statectl("bootstrap", "--format", fmt, "--spec", spec, out)
        assert done.returncode == 0, done.stderr
        read = statectl("read", out, "--uid", "proc", "--format", "jsonl")
        assert read.returncode == 0, read.stderr
        lines[fmt] = sorted(json.dumps(json.loads(line), sort_keys=True)
                            for line in read.stdout.splitlines() if line.strip())
    assert lines["rocksdb"] == lines["canonical"] and lines["canonical"]
    assert load(tmp_path / "rocksdb").operator("proc").format == "rocksdb"
    assert statectl("validate", str(tmp_path / "rocksdb")).returncode == 0
