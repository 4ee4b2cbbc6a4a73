"""Savepoints of a real Flink 2.3 SQL job (`tests/fixtures/flink-sql-probe/`: a GROUP BY, a
deduplication, a Top-3, a TUMBLE window aggregate and a regular join over one datagen source;
hashmap and RocksDB, canonical and native) open, list their operators by name and read into
typed columns.

Their input was random, so the checks are what must hold between operators that saw the
same rows: the GROUP BY's COUNT(*), SUM(v) and MAX(name) per key are exactly those of the
join's left records for that key, the Top-3's rows are the key's largest values among them,
the deduplication saw every key, each pending window has its timer at its end - 1; and the
canonical and native savepoints of one backend (taken one after the other) agree on every
state the dimension table's source does not feed.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.flink.savepoint import (keyed_table, open_flink_savepoint, operator_state_table,
                                               timers_table)
from statectl.statefmt.formats import load

PROBE = Path(__file__).parents[2] / "fixtures" / "flink-sql-probe"
FORMATS = ("hashmap-canonical", "hashmap-native", "rocksdb-canonical", "rocksdb-native")
STATEFUL = {
    "GroupAggregate[40]": {"accState": "value"},
    "Deduplicate[46]": {"deduplicate-state": "value"},
    "Rank[67]": {"data-state-with-append": "map"},
    "Join[62]": {"left-records": "map", "right-records": "map"},
    "GlobalWindowAggregate[53]": {"window-aggs": "value"},
}


def _op(fsp, name):
    return next(op for op in fsp.operators if op.name == name)


def _by_key(fsp, name) -> dict:
    return {r["f0"]: r for r in keyed_table(_op(fsp, name)).to_pylist()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_operator_opens_with_its_name(fmt):
    sp = load(PROBE / fmt)
    assert len(sp.operators) == 28
    assert all(op.uid is None and op.name for op in sp.operators)
    assert not any(op.unreadable for op in sp.operators)
    for name, states in STATEFUL.items():
        op = sp.operator_named(name)
        assert {s.name: s.kind for s in op.keyed.states} == states
        assert op.keyed.key_names == ["f0"]  # the key row's one INT field
    agg = sp.operator_named("GroupAggregate[40]").keyed.state("accState")
    assert agg.serializer == "org.apache.flink.table.runtime.typeutils.RowDataSerializer"
    window = sp.operator_named("GlobalWindowAggregate[53]")
    assert [s.name for s in window.operator_states] == ["watermark"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_arrow_types_of_the_sql_state(fmt):
    fsp = open_flink_savepoint(PROBE / fmt)
    schema = _op(fsp, "GroupAggregate[40]").keyed_schema
    assert schema.field("f0").type == pa.int32()
    assert schema.field("accState").type == pa.struct(
        [("f0", pa.int64()), ("f1", pa.int64()), ("f2", pa.string()), ("_rowkind", pa.string())])
    window = _op(fsp, "GlobalWindowAggregate[53]").keyed_schema
    assert window.field("namespace").type == pa.int64()  # the slice's end, epoch ms
    join = _op(fsp, "Join[62]").keyed_schema.field("right-records").type
    assert join == pa.map_(pa.struct([("f0", pa.int32()), ("f1", pa.string()), ("_rowkind", pa.string())]),
                           pa.int32())


@pytest.mark.parametrize("fmt", FORMATS)
def test_operators_agree_on_the_rows_they_saw(fmt):
    fsp = open_flink_savepoint(PROBE / fmt)
    agg, join = _by_key(fsp, "GroupAggregate[40]"), _by_key(fsp, "Join[62]")
    rank, dedup = _by_key(fsp, "Rank[67]"), _by_key(fsp, "Deduplicate[46]")
    assert len(agg) == 1000 and set(agg) == set(join) == set(rank) == set(dedup)
    for key, row in agg.items():
        left = [(r, n) for r, n in join[key]["left-records"]]
        acc = row["accState"]
        assert (acc["f0"], acc["f1"], acc["f2"], acc["_rowkind"]) == (
            sum(n for _, n in left), sum(r["f2"] * n for r, n in left), max(r["f1"] for r, _ in left), None)
        values = sorted((r["f2"] for r, n in left for _ in range(n)), reverse=True)
        top = rank[key]["data-state-with-append"]
        assert sorted((k["f0"] for k, _ in top), reverse=True) == values[:len(top)]
        assert all(r["f0"] == key and r["f2"] == k["f0"] for k, rows in top for r in rows)
        assert dedup[key]["deduplicate-state"] is True


@pytest.mark.parametrize("fmt", FORMATS)
def test_pending_windows_and_their_timers(fmt):
    fsp = open_flink_savepoint(PROBE / fmt)
    op = _op(fsp, "GlobalWindowAggregate[53]")
    windows = keyed_table(op).to_pylist()
    timers = timers_table(op).to_pylist()
    assert {(w["f0"], w["namespace"]) for w in windows} == {(t["f0"], t["namespace"]) for t in timers}
    assert all(t["timestamp"] == t["namespace"] - 1 and t["domain"] == "event" for t in timers)
    assert all(w["window-aggs"]["f0"] > 0 for w in windows)  # COUNT(*) of the window so far
    watermarks = operator_state_table(op, "watermark").column("value").to_pylist()
    assert len(watermarks) == 2 and all(wm < min(w["namespace"] for w in windows) for wm in watermarks)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_canonical_and_native_read_alike(backend):
    a = open_flink_savepoint(PROBE / f"{backend}-canonical")
    b = open_flink_savepoint(PROBE / f"{backend}-native")

    def rows(fsp, name, table=keyed_table, drop=()):
        out = [{k: v for k, v in r.items() if k not in ("_key_group", *drop)} for r in table(_op(fsp, name)).to_pylist()]
        return sorted(out, key=repr)
    for name in ("GroupAggregate[40]", "Deduplicate[46]", "Rank[67]", "GlobalWindowAggregate[53]"):
        assert rows(a, name) == rows(b, name)
    assert rows(a, "GlobalWindowAggregate[53]", timers_table) == rows(b, "GlobalWindowAggregate[53]", timers_table)
    assert rows(a, "Join[62]", drop=("right-records",)) == rows(b, "Join[62]", drop=("right-records",))


def test_spark_reads_the_same_rows(spark):
    """Through Spark's Data Source, a SQL operator's table equals the in-process decode."""
    path = PROBE / "rocksdb-native"
    reader = open_savepoint(spark, str(path))
    got = reader.keyed("Rank[67]").toArrow().to_pylist()
    want = keyed_table(_op(open_flink_savepoint(path), "Rank[67]")).drop_columns(["_key_group"]).to_pylist()
    assert len(got) == 1000 and sorted(got, key=repr) == sorted(want, key=repr)


def test_cli_reads_by_name_and_sql_over_named_views(cli):
    path = str(PROBE / "hashmap-canonical")
    info = cli("info", path)
    assert info.returncode == 0 and "GroupAggregate[40]" in info.stdout
    read = cli("read", path, "--name", "GroupAggregate[40]", "--where", "f0 = 35", "-f", "jsonl")
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == \
        '{"f0":35,"accState":{"f0":18,"f1":9146014,"f2":"ff891","_rowkind":null}}'
    query = cli("sql", path, "SELECT count(*) AS n, sum(a.accState.f0) AS rows FROM `GroupAggregate[40]` a "
                "JOIN `Join[62]` j ON a.f0 = j.f0 WHERE a.accState.f0 = size(j.`left-records`)", "-f", "jsonl")
    assert query.returncode == 0, query.stderr
    assert query.stdout.strip() == '{"n":1000,"rows":18000}'
    ambiguous = cli("read", path, "--name", "Calc")
    assert ambiguous.returncode == 1 and ambiguous.stderr.startswith("error: no operator named 'Calc'; operator names: ")
