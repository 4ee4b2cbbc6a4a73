"""The suite's Flink SQL job (tests/flink: mode=sql), read by statectl and compared with the
state its own input says every operator holds (expected.json, a Java model checked against
what the job's sinks received): a GROUP BY with a DISTINCT aggregate, MIN/MAX with retraction,
deduplication keep-first and keep-last, a Top-3, tumbling and hopping window aggregates, a
regular join, an interval join and an OVER aggregate; Flink 1.20 and 2.3, hashmap and
RocksDB, canonical and native, and with `table.exec.state.ttl` (TTL-wrapped state: the same
values, each with its last-access timestamp in `<state>_ttl_ts`); and Flink 2.3's ForSt backend's
NATIVE savepoint (read as a native RocksDB snapshot; tests/flink_job/test_flink_forst.py).
"""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from support import flink_job
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, timers_table
from statectl.statefmt.formats import load
from statectl.statefmt.model import TTL_SUFFIX

FORST = dict(backend="forst", format="native")  # Flink 2.x only; its savepoints are NATIVE only
SHAPES = [(v, shape) for v in flink_job.SQL_VERSIONS for shape in flink_job.SQL_SHAPES] + [("2.3.0", "forst")]
_made: dict = {}  # version: its SQL_SHAPES snapshots by shape; (version, "forst"): that snapshot


def _snapshot(version: str, shape: str):
    if shape == "forst":
        if (version, shape) not in _made:
            _made[(version, shape)] = flink_job.make_sql_snapshot(version, **FORST)
        return _made[(version, shape)]
    if version not in _made:
        _made[version] = dict(zip(flink_job.SQL_SHAPES, flink_job.make_sql_snapshots(version)))
    return _made[version][shape]


# The states `table.exec.state.ttl` wraps in TTL, by operator (windows, the interval join and the
# OVER aggregate clean up by their timers instead).
TTL_STATES = {
    "GroupAggregate[4]": {"accState", "distinctAcc_0", "distinctAcc_0_null_state"},
    "GroupAggregate[12]": {"accState", "agg0$map", "agg1$map"},
    "Deduplicate[9]": {"deduplicate-state"}, "Deduplicate[17]": {"deduplicate-state"},
    "Deduplicate[23]": {"deduplicate-state"}, "Rank[29]": {"data-state-with-append"},
    "Join[52]": {"left-records", "right-records"},
}
TTL_MS = 86_400_000  # the -ttl shapes' state_ttl, "1 d"
# With TTL, the OVER aggregate also keeps a cleanup time per key (a value state, not TTL-wrapped):
# the processing time of its last input plus 1.5 x TTL, when a processing-time timer clears the key.
OVER_CLEANUP = "RowTimeBoundedRowsOverCleanupTime"


def _has_ttl(snap) -> bool:
    return "state-ttl" in snap.expected["scenario"]["knobs"]


def plain(v):
    """A decoded value as the model writes it: DECIMAL as text, TIMESTAMP_LTZ as epoch ms,
    TIMESTAMP(3) as 'yyyy-MM-dd HH:mm:ss.SSS', rows as lists of their fields."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return round(v.timestamp() * 1000)
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if isinstance(v, dict):
        return [plain(x) for k, x in v.items() if k != "_rowkind"]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


class Operators:
    """The savepoint's SQL operators by the model's name, read into {key: row} per operator."""

    def __init__(self, snap):
        self.snap = snap
        self.fsp = open_flink_savepoint(snap.path)
        self.expected = snap.expected["operators"]

    def info(self, name):
        return self.fsp.operator(self.expected[name]["operator_id"])

    def rows(self, name) -> dict:
        return {r["f0"]: r for r in keyed_table(self.info(name)).to_pylist()}

    def model(self, name, what) -> dict:
        return {int(k): v for k, v in self.expected[name]["state"][what].items()}


@pytest.fixture(params=SHAPES, ids=[f"{v}-{s}" for v, s in SHAPES])
def ops(request):
    return Operators(_snapshot(*request.param))


def test_every_operator_opens(ops):
    sp = load(ops.snap.path)
    assert not any(op.unreadable for op in sp.operators)
    for name, exp in ops.expected.items():
        op = sp.operator(exp["operator_id"]) if sp.operators[0].name is None else sp.operator_named(name)
        keyed = {s.name for s in op.keyed.states} - ({OVER_CLEANUP} if _has_ttl(ops.snap) else set())
        assert keyed | {"_timer_state/event_user-timers", "_timer_state/processing_user-timers",
                        "_timer_state/event_window-timers", "_timer_state/processing_window-timers"} \
            >= set(exp["state"]["state_names"]) >= keyed, name


def test_group_aggregate_with_distinct(ops):
    rows, acc = ops.rows("GroupAggregate[4]"), ops.model("GroupAggregate[4]", "accState")
    distinct = ops.model("GroupAggregate[4]", "distinctAcc_0")
    assert set(rows) == set(acc)
    for k, row in rows.items():
        assert plain(row["accState"])[:4] == acc[k][:4]  # COUNT(*), SUM(v), MAX(name), COUNT(DISTINCT name)
        assert dict(row["distinctAcc_0"]) == distinct[k]


def test_min_max_with_retraction(ops):
    rows, acc = ops.rows("GroupAggregate[12]"), ops.model("GroupAggregate[12]", "accState")
    assert set(rows) == set(acc)
    for k, row in rows.items():
        (mn, mn_size, _), (mx, mx_size, _), count = plain(row["accState"])
        assert [[mn, mn_size], [mx, mx_size], count] == [acc[k][0][:2], acc[k][1][:2], acc[k][2]]
        for view in ("agg0$map", "agg1$map"):
            assert {str(v): n for v, n in row[view]} == ops.model("GroupAggregate[12]", view)[k]


def test_deduplication_keep_first_and_keep_last(ops):
    first = ops.rows("Deduplicate[17]")
    assert {k: r["deduplicate-state"] for k, r in first.items()} == ops.model("Deduplicate[17]", "seen")
    retract_input = ops.rows("Deduplicate[9]")
    assert {k: plain(r["deduplicate-state"]) for k, r in retract_input.items()} == \
        {k: [m["k"], m["v"], m["rt"]] for k, m in ops.model("Deduplicate[9]", "last_rows").items()}
    last = ops.rows("Deduplicate[23]")
    order = ["k", "name", "v", "ratio", "flag", "rt", "price", "seen_at"]  # the planner's field order
    assert {k: plain(r["deduplicate-state"]) for k, r in last.items()} == \
        {k: [m[c] for c in order] for k, m in ops.model("Deduplicate[23]", "last_rows").items()}
    assert all(r["deduplicate-state"]["_rowkind"] in (None, "+U") for r in last.values())


def test_top_3(ops):
    rows, model = ops.rows("Rank[29]"), ops.model("Rank[29]", "top_rows")
    assert set(rows) == set(model)
    for k, row in rows.items():
        held = sorted(((sk["f0"], [(r["f0"], r["f2"], r["f1"]) for r in lst])
                       for sk, lst in row["data-state-with-append"]), reverse=True)
        top = [(e["sort_key"][0], [tuple(r) for r in e["rows"]]) for e in model[k]]
        assert held[:3] == top  # Flink may keep one row beyond the top 3


@pytest.mark.parametrize("name", ["GlobalWindowAggregate[36]", "GlobalWindowAggregate[43]"])
def test_pending_window_slices_and_their_timers(ops, name):
    info = ops.info(name)
    held = sorted((r["f0"], r["namespace"], plain(r["window-aggs"])) for r in keyed_table(info).to_pylist())
    model = sorted((k, s["slice_end"], s["window-aggs"])
                   for k, slices in ops.model(name, "pending_slices").items() for s in slices)
    assert held == model
    # event-time timers at a pending window's end - 1: every tumbling window has one; a hopping
    # window's slices register the next window to fire, so its timers are some of the windows'
    state = ops.expected[name]["state"]
    windows = state.get("pending_windows") or state["pending_slices"]
    ends = {(int(k), w["window"][1] - 1) for k, ws in windows.items() for w in ws}
    timers = {(t["f0"], t["timestamp"]) for t in timers_table(info).to_pylist() if t["domain"] == "event"}
    if "pending_windows" in state:
        assert timers <= ends and {k for k, _ in timers} == {k for k, _ in ends}
    else:
        assert timers == ends


def test_regular_join_records(ops):
    rows = ops.rows("Join[52]")
    for side, what in (("left-records", "left_records"), ("right-records", "right_records")):
        model = ops.model("Join[52]", what)
        assert {k: sorted((plain(rec), n) for rec, n in r[side] or []) for k, r in rows.items() if r[side]} == \
            {k: sorted((list(e["row"].values()), e["count"]) for e in recs) for k, recs in model.items() if recs}


def test_interval_join_caches_and_cleanup_timers(ops):
    rows = ops.rows("IntervalJoin[61]")
    for side, what in (("IntervalJoinLeftCache", "left_cache"), ("IntervalJoinRightCache", "right_cache")):
        model = ops.model("IntervalJoin[61]", what)
        assert {k: {t: [[list(e["row"].values()), e["emitted"]] for e in entries] for t, entries in
                    sorted(m.items())} for k, m in model.items()} == \
            {k: {str(t): plain(entries) for t, entries in sorted(r[side], key=lambda x: str(x[0]))}
             for k, r in rows.items() if r[side]}
    for state in ("IntervalJoinLeftTimerState", "IntervalJoinRightTimerState"):
        assert {k: r[state] for k, r in rows.items() if r[state] is not None} == ops.model("IntervalJoin[61]", state)


def test_over_aggregate(ops):
    """Every key the model says the OVER aggregate holds is read, none more, each with its state."""
    rows = ops.rows("OverAggregate[67]")
    acc = ops.model("OverAggregate[67]", "accState")
    assert acc and set(rows) == set(acc)
    for k, row in rows.items():
        count, total, count1, (mn, size, _) = plain(row["accState"])
        assert [count, total, count1, [mn, size]] == acc[k][:3] + [acc[k][3][:2]]
        assert {str(t): plain(v) for t, v in row["inputState"]} == \
            {t: [list(x.values()) for x in v] for t, v in ops.model("OverAggregate[67]", "inputState")[k].items()}
        assert {str(v): n for v, n in row["agg3$map"]} == ops.model("OverAggregate[67]", "agg3$map")[k]
        assert row["processedCountState"] == ops.model("OverAggregate[67]", "processedCountState")[k]
        assert row["lastTriggeringTsState"] == ops.model("OverAggregate[67]", "lastTriggeringTsState")[k]


def test_ttl_state_reads_with_its_last_access_timestamps(ops):
    """With TTL, each TTL state's value (a map's entry) has a last-access timestamp of the job's run
    (epoch ms of the wall clock while it made the savepoint); without, no state has one."""
    first, last = ops.snap.expected["produce_wall_clock_ms"]
    want = TTL_STATES if _has_ttl(ops.snap) else {}
    found = {}
    for name in ops.expected:
        table = keyed_table(ops.info(name))
        ttl = {c.removesuffix(TTL_SUFFIX) for c in table.column_names if c.endswith(TTL_SUFFIX)}
        if ttl:
            found[name] = ttl
        for state in ttl:
            for value, ts in zip(table[state].to_pylist(), table[state + TTL_SUFFIX].to_pylist()):
                stamps = [t for _, t in ts] if isinstance(ts, list) else [ts]
                assert (value is None) == (ts is None), (name, state)
                assert all(first <= t <= last for t in stamps if ts is not None), (name, state)
    assert found == want


def test_ttl_over_aggregate_cleanup_times_and_their_timers(ops):
    info = ops.info("OverAggregate[67]")
    if not _has_ttl(ops.snap):
        assert OVER_CLEANUP not in info.keyed_schema.names
        return
    first, last = ops.snap.expected["produce_wall_clock_ms"]
    cleanup = {r["f0"]: r[OVER_CLEANUP] for r in keyed_table(info).to_pylist()}
    assert len(cleanup) == len(ops.model("OverAggregate[67]", "accState"))
    assert all(first <= t - TTL_MS * 3 // 2 <= last for t in cleanup.values())
    timers = {(t["f0"], t["timestamp"]) for t in timers_table(info).to_pylist() if t["domain"] == "processing"}
    assert timers == set(cleanup.items())


def test_cli_info_and_validate(ops, cli):
    path = str(ops.snap.path)
    info = cli("info", "--json", path)
    assert info.returncode == 0, info.stderr
    doc = json.loads(info.stdout)
    assert not any(op.get("unreadable") for op in doc["operators"])
    assert {op["operator_id"] for op in doc["operators"]} >= {e["operator_id"] for e in ops.expected.values()}
    by_id = {op["operator_id"]: op for op in doc["operators"]}
    ttl = {name: {s["name"] for s in by_id[e["operator_id"]]["states"] if s.get("ttl")}
           for name, e in ops.expected.items()}
    assert {name: states for name, states in ttl.items() if states} == (TTL_STATES if _has_ttl(ops.snap) else {})
    valid = cli("validate", path)
    assert valid.returncode == 0, valid.stderr


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["rocksdb-native", "hashmap-canonical"])
def test_spark_reads_every_sql_table_as_the_format_layer_does(spark, shape):
    """Through `readers` (Spark's Data Source), every SQL operator's keyed table and timers."""
    from statectl.readers import open_savepoint

    ops = Operators(_snapshot("2.3.0", shape))
    reader = open_savepoint(spark, str(ops.snap.path))
    for name, exp in ops.expected.items():
        info = ops.info(name)
        got = reader.keyed(reader.operator(exp["operator_id"]).label).toArrow().to_pylist()
        want = keyed_table(info).drop_columns(["_key_group"]).to_pylist()
        assert sorted(got, key=repr) == sorted(want, key=repr), name
        if info.timers_schema is not None:  # a regular join has no timer service
            timers = reader.timers(reader.operator(exp["operator_id"]).label).toArrow().num_rows
            assert timers == timers_table(info).num_rows, name


@pytest.mark.parametrize("shape", ["rocksdb-canonical", "rocksdb-canonical-ttl"])
def test_cli_reads_a_sql_operator_by_name(cli, shape):
    snap = _snapshot("2.3.0", shape)
    model = {int(k): v for k, v in snap.expected["operators"]["GroupAggregate[4]"]["state"]["accState"].items()}
    out = cli("read", str(snap.path), "--name", "GroupAggregate[4]", "--key", "10", "-f", "jsonl")
    assert out.returncode == 0, out.stderr
    [row] = [json.loads(line) for line in out.stdout.strip().splitlines()]
    acc = row["accState"]
    assert [acc["f0"], acc["f1"], acc["f2"], acc["f3"]] == model[10][:4]
    first, last = snap.expected["produce_wall_clock_ms"]
    if _has_ttl(snap):
        assert first <= row["accState" + TTL_SUFFIX] <= last
        assert set(row["distinctAcc_0"]) == set(row["distinctAcc_0" + TTL_SUFFIX])  # a map with the same keys
        assert all(first <= t <= last for t in row["distinctAcc_0" + TTL_SUFFIX].values())
    else:
        assert not [c for c in row if c.endswith(TTL_SUFFIX)]
