"""The suite's Flink SQL job (mode=sql, tests/flink/README.md "The SQL job") against real Flink 1.20
and 2.3: its savepoints exist in every backend and format, expected.json names the operators the
savepoint holds (by operator id, and by name where _metadata stores names), each stateful operator's
states are where Flink wrote them, and what each statement's sink received equals the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import flink_job
from statectl.statefmt.flink import handles
from statectl.statefmt.flink.metadata import parse_metadata

METADATA_VERSION = {"1.20.3": 4, "2.3.0": 6}
STATEFUL_KINDS = {"GroupAggregate", "Deduplicate", "Rank", "GlobalWindowAggregate", "Join", "IntervalJoin",
                  "OverAggregate"}
# The stateful operators' names, the same in every shape and both releases (the job resets the
# planner's node counter before each run, so a run's place in its JVM does not show in them).
OPERATOR_NAMES = {
    "group_agg": ["GroupAggregate[4]"], "retract_agg": ["Deduplicate[9]", "GroupAggregate[12]"],
    "dedup_first": ["Deduplicate[17]"], "dedup_last": ["Deduplicate[23]"], "top_n": ["Rank[29]"],
    "tumble": ["GlobalWindowAggregate[36]"], "hop": ["GlobalWindowAggregate[43]"], "join": ["Join[52]"],
    "interval_join": ["IntervalJoin[61]"], "over": ["OverAggregate[67]"],
}


@pytest.fixture(scope="module", params=flink_job.SQL_VERSIONS)
def sql_release(request):
    """One release's SQL savepoints (every SQL_SHAPES entry), made in one JVM and cached."""
    version = request.param
    try:
        flink_job.fetch_jars(version)  # pip-downloads the release's jars when they are missing
        snaps = flink_job.make_sql_snapshots(version)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    return version, dict(zip(flink_job.SQL_SHAPES, snaps))


def _keyed_bytes(savepoint: Path, handle) -> bytes:
    """The bytes of a keyed state handle's stream (key-groups) or meta stream (native RocksDB)."""
    stream = getattr(handle, "stream", None) or getattr(handle, "meta", None)
    if isinstance(stream, handles.InlineStream):
        return stream.data
    if isinstance(stream, handles.RelativeFile):
        return (savepoint / stream.relative_path).read_bytes()
    raise AssertionError(f"unexpected keyed handle stream {stream!r}")


@pytest.mark.parametrize("shape", sorted(flink_job.SQL_SHAPES))
def test_sql_savepoint(sql_release, shape):
    version, snaps = sql_release
    snap = snaps[shape]
    exp = snap.expected
    want = flink_job.SQL_SHAPES[shape]
    assert exp["flink_version"] == version and exp["mode"] == "sql"
    assert (exp["state_backend"], exp["savepoint_format"]) == (want["backend"], want["format"].upper())
    assert snap.metadata.is_file()
    assert flink_job.metadata_header(snap.metadata) == (flink_job.METADATA_MAGIC, METADATA_VERSION[version])
    meta = parse_metadata(snap.metadata.read_bytes())
    by_id = {op.operator_id: op for op in meta.operators}

    # Every operator of the job graph is in the savepoint under the id the harness computed.
    assert set(by_id) == {n["operator_id"] for n in exp["job_graph"]}
    for node in exp["job_graph"]:
        op = by_id[node["operator_id"]]
        assert (op.parallelism, op.max_parallelism) == (node["parallelism"], node["max_parallelism"])
        if METADATA_VERSION[version] >= 5:  # 2.x stores each operator's name (and uid)
            assert op.name == node["name"]
            assert op.uid == node["uid"]

    # The stateful operators: one per kind at least, each holding keyed state with its state names.
    ops = exp["operators"]
    assert {o["kind"] for o in ops.values()} == STATEFUL_KINDS
    assert {name: sorted(st["operators"]) for name, st in exp["statements"].items()} == OPERATOR_NAMES
    assert sorted(o["statement"] for o in ops.values()) == sorted(
        [s for s in exp["statements"] for _ in exp["statements"][s]["operators"]])
    for name, o in ops.items():
        assert name == o["name"] and name.startswith(o["kind"] + "[")
        op = by_id[o["operator_id"]]
        keyed = [s.managed_keyed for s in op.subtasks if s.managed_keyed is not None]
        assert len(keyed) == exp["parallelism"], name
        data = b"".join(_keyed_bytes(snap.path, h) for h in keyed)
        missing = [s for s in o["state"]["state_names"] if s.encode() not in data]
        assert not missing, f"{name}: state names not in its keyed state: {missing}"
    stateful_ids = {o["operator_id"] for o in ops.values()}
    for op in meta.operators:
        if op.operator_id not in stateful_ids:
            assert all(s.managed_keyed is None for s in op.subtasks), op.name

    # What each statement's sink received before the savepoint is the model's result.
    for name, st in exp["statements"].items():
        assert st["expected_output"], name
        assert st["received_output"] == st["expected_output"], name
        assert st["received_matches_model"], name


def test_sql_model_shape(sql_release):
    """The input leaves state of every kind behind: fired and pending windows, cached interval-join
    rows on both sides, OVER rows buffered past the watermark."""
    _, snaps = sql_release
    exp = snaps["rocksdb-canonical"].expected
    wm = exp["watermark_at_snapshot"]
    ops = {(o["statement"], o["kind"]): o["state"] for o in exp["operators"].values()}
    for statement in ("tumble", "hop"):
        assert ops[(statement, "GlobalWindowAggregate")]["pending_slices"]
        assert exp["statements"][statement]["expected_output"]  # fired before the savepoint
    ij = ops[("interval_join", "IntervalJoin")]
    assert ij["left_cache"] and ij["right_cache"]
    over = ops[("over", "OverAggregate")]
    assert any(t > wm for ts in over["pending_event_timers"].values() for t in ts)
    assert len(exp["input"]["src"]) == int(exp["scenario"]["knobs"]["events"])
