"""Restore checks for savepoints statectl writes: the suite's Flink job (tests/flink/) restores the
dev fixtures as they are (the shapes statectl's Flink writer is checked against) and, in declared
mode, any savepoint whose states a JSON description declares, dumping everything it restored."""

from __future__ import annotations

import copy

import pytest

from support import flink_job
from support.flink_shapes import SHAPES

FIXTURES = sorted(p.name for p in flink_job.FIXTURES.iterdir() if (p / "expected.json").exists())
# Canonical savepoints restore into either backend; native ones only into the backend that wrote them.
FIXTURE_RESTORES = [(name, backend) for name in FIXTURES
                    for backend in (("hashmap", "rocksdb") if name.endswith("-canonical") else (name.split("-")[1],))]
# The job's own Flink 2.3 savepoints in declared mode: the release tests' shapes (support/flink_shapes.py,
# so made once for both) and one with the collections group (List, Map and Tuple2<Integer, Boolean> values).
JOB_SHAPES = {**SHAPES, "hashmap-canonical-collections": dict(
    backend="hashmap", format="canonical", key_type="int", states="scalars,collections", seed=99, keys=12,
    events=200, partitions=4, inline_threshold=0)}
JOB_RESTORES = [("rocksdb-canonical", "hashmap"), ("rocksdb-canonical", "rocksdb"),
                ("hashmap-native", "hashmap"), ("rocksdb-native", "rocksdb"),
                ("hashmap-canonical-collections", "hashmap"), ("hashmap-canonical-collections", "rocksdb")]


@pytest.fixture(scope="module")
def flink_23():
    """Flink 2.3.0's jars and the job compiled against them; missing ones fail with the command."""
    try:
        flink_job.compile_job("2.3.0")
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def fixture_restores(flink_23):
    """Every dev fixture restored into a job of its shape and in declared mode, in one JVM
    ({(name, backend): {"job": dump, "declared": dump}}, dumps cached by content)."""
    items = [(name, flink_job.FIXTURES / name / "savepoint", backend) for name, backend in FIXTURE_RESTORES]
    return dict(zip(FIXTURE_RESTORES, flink_job.restore_fixture_dumps(items)))


@pytest.fixture(scope="module")
def job_restores(flink_23, flink_snapshots):
    """The job's own 2.3 savepoints and their declared-mode dumps, in one JVM."""
    snaps = dict(zip(JOB_SHAPES, flink_snapshots("2.3.0", list(JOB_SHAPES.values()))))
    by_hash = _by_uid_hash(snaps["rocksdb-native"].expected)
    dumps = flink_job.restore_declared_many("2.3.0", [
        (snaps[shape].path, flink_job.job_description(snaps[shape].expected), backend)
        for shape, backend in JOB_RESTORES] + [(snaps["rocksdb-native"].path, by_hash, "rocksdb")])
    restores = {case: (snaps[case[0]], dump) for case, dump in zip(JOB_RESTORES, dumps)}
    restores["rocksdb-native", "by uid hash"] = (snaps["rocksdb-native"], dumps[-1])
    return restores


def _by_uid_hash(expected: dict) -> dict:
    """The job's description with every operator named by its OperatorID (uid_hash), not its uid."""
    description = flink_job.job_description(expected)
    for op in description["operators"]:
        op["uid_hash"] = expected["operators"][op.pop("uid")]["operator_id"]
    return description


def test_the_fixture_set():
    assert FIXTURES == ["int-hashmap-native", "long-hashmap-canonical", "long-rocksdb-canonical",
                        "long-rocksdb-native", "pojo-hashmap-canonical", "pojo-rocksdb-canonical",
                        "tuple-rocksdb-native"]
    assert len(FIXTURE_RESTORES) == 11


def _proc(expected: dict) -> dict:
    return next(op for op in expected["operators"].values() if op["role"] == "proc")


@pytest.mark.parametrize("name,backend", FIXTURE_RESTORES)
def test_dev_fixture_restores_with_its_state(fixture_restores, name, backend):
    expected, dumps = flink_job.fixture_expected(name), fixture_restores[name, backend]
    for dump in dumps.values():
        assert dump["flink_version"] == "2.3.0" and dump["state_backend"] == backend
    assert flink_job.restore_mismatches(expected, dumps["job"]) == []
    assert flink_job.declared_mismatches(expected, dumps["declared"]) == []
    proc = _proc(expected)
    for dump in dumps.values():
        restored = dump["operators"][proc["uid"]]
        assert sorted(restored["keyed_state"]) == sorted(proc["keyed_state"])
        assert set(restored["keyed_state"]["count"]["values"]) == set(expected["keys"])
    # every timer and window the fixture had pending fired after the restore
    pending = sum(map(len, proc["timers"]["event_time"]["values"].values()))
    assert pending > 0
    assert sum(map(len, dumps["job"]["operators"][proc["uid"]]["timers"]["event_time"]["values"].values())) == pending
    assert sum(map(len, dumps["declared"]["operators"][proc["uid"]]["timers"]["event_time"]["fired"].values())) == pending


def test_dev_fixture_ttl_timestamps_are_dumped(fixture_restores):
    """Declared mode reads TTL states through Flink's TtlSerializer: each value's last-access
    timestamp, equal to the fixture's observed one (its bounds are one instant for most keys)."""
    expected = flink_job.fixture_expected("pojo-hashmap-canonical")
    dump = fixture_restores["pojo-hashmap-canonical", "rocksdb"]["declared"]["operators"]["pj-proc"]
    bounds = expected["operators"]["pj-proc"]["keyed_state"]["ttl_last"]["timestamps"]["bounds"]
    assert dump["keyed_state"]["ttl_last"]["last_access"]["user-000"] == bounds["user-000"][0] == bounds["user-000"][1]
    stamps = dump["keyed_state"]["ttl_seen"]["last_access"]["user-000"]
    assert sorted(stamps) == ["buy", "click", "view"]
    assert all(isinstance(t, int) for t in stamps.values())


def test_fixture_comparison_reports_each_difference(fixture_restores):
    """Not vacuous: a changed TTL value, a POJO field and a missing window are each reported."""
    expected = copy.deepcopy(flink_job.fixture_expected("pojo-rocksdb-canonical"))
    dump = fixture_restores["pojo-rocksdb-canonical", "hashmap"]["job"]
    proc = expected["operators"]["pj-proc"]
    proc["keyed_state"]["ttl_last"]["values"]["user-003"] += "!"
    proc["keyed_state"]["profile"]["values"]["user-007"]["hits"] += 1
    expected["operators"]["pj-win"]["keyed_state"]["window-contents"]["values"].pop()
    problems = flink_job.restore_mismatches(expected, dump)
    assert [p.split(":")[0] for p in problems] == [
        "pj-proc state profile", "pj-proc state ttl_last", "pj-win windows fired"]


def test_declared_comparison_reports_each_difference(fixture_restores):
    """Not vacuous: a key the model does not know, an accumulator, a processing-time timer, a
    window and a TTL timestamp outside its bounds are each reported."""
    expected = copy.deepcopy(flink_job.fixture_expected("tuple-rocksdb-native"))
    dump = fixture_restores["tuple-rocksdb-native", "rocksdb"]["declared"]
    proc = expected["operators"]["tk-proc"]
    del proc["keyed_state"]["count"]["values"]["(sa,-3)"]
    proc["keyed_state"]["avg"]["values"]["(sa,4)"]["accumulator"][1] += 1
    proc["timers"]["processing_time"]["values"]["(sa,4)"].append(1)
    expected["operators"]["tk-win"]["keyed_state"]["window-contents"]["values"][0]["value"][1] += 1
    bounds = proc["keyed_state"]["ttl_last"]["timestamps"]["bounds"]
    bounds["(sa,4)"] = [bounds["(sa,4)"][0] + 1, bounds["(sa,4)"][1] + 1]
    problems = flink_job.declared_mismatches(expected, dump)
    assert [p.split(":")[0] for p in problems] == [
        "tk-proc state count", "tk-proc state avg", "tk-proc state ttl_last timestamp[(sa,4)]",
        "tk-proc processing-time timers", "tk-win windows"]


def test_restore_fixture_shape_one_call(fixture_restores):
    """The one-savepoint form used by round trips (served from the cache the module fixture
    filled); ttl_bounds replaces the fixture's TTL bounds, as for a savepoint written later."""
    name = "pojo-hashmap-canonical"
    path = flink_job.FIXTURES / name / "savepoint"
    assert flink_job.restore_fixture_shape(name, path, "rocksdb") == []
    problems = flink_job.restore_fixture_shape(name, path, "rocksdb", ttl_bounds=(0, 1))
    assert problems and {p.split(" timestamp")[0] for p in problems} == {
        "declared: pj-proc state ttl_last", "declared: pj-proc state ttl_seen"}


@pytest.mark.parametrize("shape,backend", JOB_RESTORES)
def test_declared_mode_restores_the_jobs_savepoints(job_restores, shape, backend):
    snap, dump = job_restores[shape, backend]
    assert dump["mode"] == "declared" and dump["state_backend"] == backend
    assert flink_job.declared_mismatches(snap.expected, dump) == []
    proc = _proc(snap.expected)
    assert len(dump["operators"][proc["uid"]]["keyed_state"]["count"]["values"]) == JOB_SHAPES[shape]["keys"]


def test_declared_mode_names_operators_by_uid_hash(job_restores):
    """An operator known only by its OperatorID (uid_hash) restores the same state as by its uid;
    the dump names it by that id."""
    snap, dump = job_restores["rocksdb-native", "by uid hash"]
    ids = {op["operator_id"]: uid for uid, op in snap.expected["operators"].items()}
    assert set(dump["operators"]) == {op["operator_id"] for op in snap.expected["operators"].values()
                                      if op["role"] in ("src", "union-op", "bcast", "proc", "win")}
    renamed = {**dump, "operators": {ids[i]: op for i, op in dump["operators"].items()}}
    assert flink_job.declared_mismatches(snap.expected, renamed) == []
    by_uid = job_restores["rocksdb-native", "rocksdb"][1]
    assert renamed["operators"] == by_uid["operators"]


def test_declared_mode_reads_collection_values(job_restores):
    """ValueState<List<Long>>, ValueState<Map<String, Integer>> and ListState<Tuple2<Integer,
    Boolean>> come back as JSON lists, objects and [f0, f1] pairs, equal to the job's model."""
    snap, dump = job_restores["hashmap-canonical-collections", "rocksdb"]
    states = dump["operators"]["proc"]["keyed_state"]
    label = sorted(states["recent"]["values"])[0]
    assert states["recent"]["values"][label] == snap.expected["operators"]["proc"]["keyed_state"]["recent"]["values"][label]
    assert len(states["recent"]["values"][label]) == 3 and all(isinstance(v, int) for v in states["recent"]["values"][label])
    counts = states["type_counts"]["values"][label]
    assert set(counts) <= {"buy", "click", "view"} and sum(counts.values()) == states["count"]["values"][label]
    marks = states["marks"]["values"][label]
    assert len(marks) == states["count"]["values"][label] and all(isinstance(s, int) and isinstance(b, bool) for s, b in marks)


def test_declared_mode_with_flink_1_20(flink_snapshots):
    """Declared mode against Flink 1.20.3 (its _metadata v4 has no uids; the job's uids hash to the same ids)."""
    snap, = flink_snapshots("1.20.3", [SHAPES["hashmap-native"]])
    dump = flink_job.restore_declared("1.20.3", snap.path, flink_job.job_description(snap.expected), "hashmap")
    assert dump["flink_version"] == "1.20.3"
    assert flink_job.declared_mismatches(snap.expected, dump) == []


@pytest.mark.slow
def test_a_wrongly_declared_type_fails_the_restore(flink_23):
    """Flink checks each declared serializer against the savepoint's: count declared Integer
    (the savepoint's is Long) ends the restore with Flink's incompatibility error."""
    name = "int-hashmap-native"
    description = flink_job.job_description(flink_job.fixture_expected(name))
    for op in description["operators"]:
        for state in op.get("keyed_state", []):
            if state["name"] == "count":
                state["type"] = "Integer"
    with pytest.raises(flink_job.FlinkJobError) as err:
        flink_job.restore_declared("2.3.0", flink_job.FIXTURES / name / "savepoint", description, "hashmap")
    assert ("StateMigrationException: For heap backends, the new state serializer "
            "(org.apache.flink.api.common.typeutils.base.IntSerializer@") in str(err.value)
    assert "must not be incompatible with the old state serializer (org.apache.flink.api.common.typeutils.base.LongSerializer@" in str(err.value)
