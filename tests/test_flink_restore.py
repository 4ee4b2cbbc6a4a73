"""Restore checks for savepoints statectl writes: the suite's Flink job (tests/flink/) restores the
dev fixtures as they are (the shapes statectl's Flink writer is checked against) and, in declared
mode, any savepoint whose states a JSON description declares, dumping everything it restored."""

from __future__ import annotations

import copy

import pytest

import flink_job

FIXTURES = sorted(p.name for p in flink_job.FIXTURES.iterdir() if (p / "expected.json").exists())
# Canonical savepoints restore into either backend; native ones only into the backend that wrote them.
FIXTURE_RESTORES = [(name, backend) for name in FIXTURES
                    for backend in (("hashmap", "rocksdb") if name.endswith("-canonical") else (name.split("-")[1],))]


@pytest.fixture(scope="module")
def flink_23():
    """Flink 2.3.0's jars and the job compiled against them; missing ones fail with the command."""
    try:
        flink_job.compile_job("2.3.0")
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def fixture_restores(flink_23):
    """Every dev fixture restored into a job of its shape, in one JVM (dumps cached by content)."""
    items = [(name, flink_job.FIXTURES / name / "savepoint", backend) for name, backend in FIXTURE_RESTORES]
    dumps = flink_job.restore_fixture_dumps(items)
    return dict(zip(FIXTURE_RESTORES, dumps))


def test_the_fixture_set():
    assert FIXTURES == ["int-hashmap-native", "long-hashmap-canonical", "long-rocksdb-canonical",
                        "long-rocksdb-native", "pojo-hashmap-canonical", "pojo-rocksdb-canonical",
                        "tuple-rocksdb-native"]
    assert len(FIXTURE_RESTORES) == 11


@pytest.mark.parametrize("name,backend", FIXTURE_RESTORES)
def test_dev_fixture_restores_with_its_state(fixture_restores, name, backend):
    expected, dump = flink_job.fixture_expected(name), fixture_restores[name, backend]
    assert dump["flink_version"] == "2.3.0" and dump["state_backend"] == backend
    assert flink_job.restore_mismatches(expected, dump) == []
    proc = next(op for op in expected["operators"].values() if op["role"] == "proc")
    restored = dump["operators"][proc["uid"]]["keyed_state"]
    assert sorted(restored) == sorted(proc["keyed_state"])
    assert set(restored["count"]["values"]) == set(expected["keys"])
    # the final watermark fired every timer and window the fixture had pending
    assert sum(map(len, dump["operators"][proc["uid"]]["timers"]["event_time"]["values"].values())) == sum(
        map(len, proc["timers"]["event_time"]["values"].values())) > 0


def test_fixture_comparison_reports_each_difference(fixture_restores):
    """Not vacuous: a changed TTL value, a missing window and a POJO field are each reported."""
    expected = copy.deepcopy(flink_job.fixture_expected("pojo-rocksdb-canonical"))
    dump = fixture_restores["pojo-rocksdb-canonical", "hashmap"]
    proc = expected["operators"]["pj-proc"]
    proc["keyed_state"]["ttl_last"]["values"]["user-003"] += "!"
    proc["keyed_state"]["profile"]["values"]["user-007"]["hits"] += 1
    expected["operators"]["pj-win"]["keyed_state"]["window-contents"]["values"].pop()
    problems = flink_job.restore_mismatches(expected, dump)
    assert [p.split(":")[0] for p in problems] == [
        "pj-proc state profile", "pj-proc state ttl_last", "pj-win windows fired"]


def test_restore_fixture_shape_one_call(fixture_restores):
    """The one-savepoint form used by round trips: the fixture's own savepoint gives no mismatch
    (served from the cache the module fixture filled)."""
    name = "int-hashmap-native"
    assert flink_job.restore_fixture_shape(name, flink_job.FIXTURES / name / "savepoint", "hashmap") == []
