"""The SQL job restores its own savepoints and continues (mode=sql-restore, tests/flink/README.md
"Restoring the SQL job"), in Flink 1.20 and 2.3, hashmap and RocksDB, with and without
`table.exec.state.ttl` (flink_job.SQL_SHAPES): fed a second batch of events,
the restored job emits exactly what the model of the saved state says (GROUP BY: -U old, +U new
totals; the first-row deduplication: only keys it never saw), and every statement ends with the
table of a reference job that ran both batches without stopping. A job started without the saved
state emits something else: the check can fail. Flink refuses a savepoint at another max parallelism."""

from __future__ import annotations

import pytest

from support import flink_job

pytestmark = pytest.mark.slow

MODELLED = ("group_agg", "dedup_first")
# The restores of one release, all in one JVM: each shape's savepoint in its own backend, one at a
# new parallelism, the reference run and a run without the saved state.
RESTORES = {
    **{shape: (shape, dict(backend=spec["backend"])) for shape, spec in flink_job.SQL_SHAPES.items()},
    "hashmap-canonical-p3": ("hashmap-canonical", dict(backend="hashmap", parallelism=3)),
    "reference": (None, dict(backend="hashmap", first_batch=True)),
    "no-state": (None, dict(backend="hashmap")),
}


@pytest.fixture(scope="module", params=flink_job.SQL_VERSIONS)
def restored(request):
    """One release's SQL savepoints (by shape) and the dumps of RESTORES, made in two JVMs and cached."""
    version = request.param
    try:
        flink_job.fetch_jars(version)
        snaps = dict(zip(flink_job.SQL_SHAPES, flink_job.make_sql_snapshots(version)))
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    items = [(None if shape is None else snaps[shape], kw) for shape, kw in RESTORES.values()]
    return version, snaps, dict(zip(RESTORES, flink_job.restore_sqls(version, items)))


def _stateful_ids(snap) -> dict[str, str]:
    return {name: op["operator_id"] for name, op in snap.expected["operators"].items()}


def _final_table(snap, dump, statement: str) -> list[list]:
    """What the statement's sink holds once the restored job's changelog is applied to the saved output."""
    saved = snap.expected["statements"][statement]["received_output"]
    return flink_job.materialize(saved, dump["statements"][statement]["received_changelog"])


@pytest.mark.parametrize("run", [r for r, (shape, _) in RESTORES.items() if shape is not None])
def test_restored_job_continues_as_the_model_says(restored, run):
    version, snaps, dumps = restored
    shape, kw = RESTORES[run]
    dump, snap = dumps[run], snaps[shape]
    assert dump["flink_version"] == version and dump["restored_from"] == str(snap.path.resolve())
    assert (dump["state_backend"], dump["parallelism"]) == (kw["backend"], kw.get("parallelism", 2))
    ids = dump["operator_ids"]
    assert {name: ids.get(name) for name in _stateful_ids(snap)} == _stateful_ids(snap)
    for statement in MODELLED:
        got = flink_job.sorted_rows(dump["statements"][statement]["received_changelog"])
        assert got == flink_job.sorted_rows(dump["model_after_restore"][statement]), statement
    group = dump["statements"]["group_agg"]["received_changelog"]
    assert any(row[0] == "-U" for row in group) and any(row[0] == "+I" for row in group)


@pytest.mark.parametrize("run", [r for r, (shape, _) in RESTORES.items() if shape is not None])
def test_restored_job_ends_where_the_reference_ends(restored, run):
    _, snaps, dumps = restored
    dump, snap, reference = dumps[run], snaps[RESTORES[run][0]], dumps["reference"]
    for statement, ref in reference["statements"].items():
        assert ref["received_changelog"], f"{statement}: the second batch changed nothing in the reference"
        assert _final_table(snap, dump, statement) == flink_job.sorted_rows(ref["received_output"]), statement


def test_reference_continues_as_the_model_says(restored):
    reference = restored[2]["reference"]
    for statement in MODELLED:
        got = flink_job.sorted_rows(reference["statements"][statement]["received_changelog"])
        assert got == flink_job.sorted_rows(reference["model_after_restore"][statement]), statement


def test_without_the_saved_group_by_state_the_check_fails(restored):
    _, snaps, dumps = restored
    dump, snap = dumps["no-state"], snaps["hashmap-canonical"]
    group = dump["statements"]["group_agg"]["received_changelog"]
    assert flink_job.sorted_rows(group) != flink_job.sorted_rows(dump["model_after_restore"]["group_agg"])
    reference = dumps["reference"]["statements"]["group_agg"]["received_output"]
    assert _final_table(snap, dump, "group_agg") != flink_job.sorted_rows(reference)


def test_flink_refuses_the_savepoint_at_another_max_parallelism(restored):
    """The max_parallelism knob reaches Flink: a savepoint restores only at its own max parallelism
    (a rescaled one is written for the new one), so the job fails to start, naming the mismatch."""
    version, snaps, _ = restored
    with pytest.raises(flink_job.FlinkJobError, match="Max parallelism mismatch"):
        flink_job.restore_sql(version, snaps["hashmap-canonical"], backend="hashmap", max_parallelism=256)
