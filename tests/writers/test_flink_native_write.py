"""Native Flink writes: a rescale of a native savepoint (RocksDB on Flink 1.17, 1.20 and 2.3, ForSt
on 2.3) writes its keyed operators as native RocksDB snapshots (`statefmt/flink/native_write.py`),
which read the same rows as the base, TTL timestamps included, and which real Flink restores into
the backend that made the base with exactly the job's state: 128 -> 256 and back to 128."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.flink.handles import IncrementalRocksDB, KeyGroupsStream
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.savepoint_write import NATIVE_TRAILER
from support import flink_job
from support.cli_runner import statectl
from support.flink_shapes import SHAPES
from support.savepoint_rows import digest

# case: (Flink release, the job's snapshot), each rescaled 128 -> 256 -> 128
CASES = {
    "rocksdb-1.17": ("1.17.2", SHAPES["rocksdb-native"]),
    "rocksdb-1.20": ("1.20.3", SHAPES["rocksdb-native"]),
    "rocksdb-2.3": ("2.3.0", SHAPES["rocksdb-native"]),
    "forst-2.3": ("2.3.0", dict(backend="forst", format="native")),
}
STEPS = (256, 128)


@pytest.fixture(scope="module")
def rescaled(flink_snapshots, tmp_path_factory):
    """{case: (snapshot, base copy, [(max parallelism, rescaled savepoint), ...])}."""
    out = {}
    for name, (version, shape) in CASES.items():
        snap, = flink_snapshots(version, [shape])
        work = tmp_path_factory.mktemp(name)
        base = work / "base"
        shutil.copytree(snap.path, base)
        before = digest(base)
        source, done = base, []
        for max_p in STEPS:
            target = work / f"maxp-{max_p}"
            result = statectl("rescale", str(source), str(target), "--max-parallelism", str(max_p))
            assert result.returncode == 0, result.stderr
            done.append((max_p, target))
            source = target
        assert digest(base) == before
        out[name] = (snap, base, done)
    return out


def _rows(df) -> list[str]:
    return sorted(json.dumps(r.asDict(True), sort_keys=True, default=str) for r in df.collect())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_native_base_is_rescaled_into_native_snapshots(rescaled, name):
    _, base, done = rescaled[name]
    for max_p, path in done:
        sp = open_flink_savepoint(path)
        assert sp.metadata.trailer == NATIVE_TRAILER
        keyed = [(op, s.managed_keyed) for op in sp.metadata.operators for s in op.subtasks
                 if s.managed_keyed is not None]
        assert len({op.operator_id for op, _ in keyed}) == 2  # proc and win (1.x metadata has no uids)
        for op, handle in keyed:
            assert isinstance(handle, IncrementalRocksDB) and op.max_parallelism == max_p
            names = [n for n, _ in handle.private]
            assert handle.shared == () and "CURRENT" in names and any(n.startswith("MANIFEST-") for n in names)
            for _, f in (*handle.private, ("meta", handle.meta)):
                assert (path / f.relative_path).stat().st_size == f.size
        assert not any(isinstance(s.managed_keyed, KeyGroupsStream)
                       for op in sp.metadata.operators for s in op.subtasks)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_native_outputs_read_the_rows_of_the_base(spark, rescaled, name):
    _, base, done = rescaled[name]
    a = open_savepoint(spark, str(base))
    for _, path in done:
        b = open_savepoint(spark, str(path))
        for uid in ("proc", "win"):
            for table in ("keyed", "timers"):
                before = _rows(getattr(a, table)(uid))
                assert before and _rows(getattr(b, table)(uid)) == before, (path, uid, table)


def _at_max_parallelism(expected: dict, max_p: int) -> dict:
    out = copy.deepcopy(expected)
    out["scenario"]["knobs"]["max-parallelism"] = str(max_p)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("version", sorted({v for v, _ in CASES.values()}))
def test_flink_restores_native_outputs_into_their_backend(rescaled, version):
    items = [(flink_job.Snapshot(path, _at_max_parallelism(snap.expected, max_p), path.parent / f"restore-{max_p}"),
              CASES[name][1]["backend"])
             for name, (snap, _, done) in sorted(rescaled.items()) if CASES[name][0] == version
             for max_p, path in done]
    dumps = flink_job.restore_snapshots(version, items)
    for (snap, backend), dump in zip(items, dumps):
        assert flink_job.restore_mismatches(snap.expected, dump) == [], (snap.path, backend)
        proc = dump["operators"]["proc"]
        assert len(proc["keyed_state"]["count"]["values"]) == int(snap.expected["scenario"]["knobs"]["keys"])
        assert sum(map(len, proc["timers"]["event_time"]["values"].values())) > 0
        assert dump["operators"]["win"]["keyed_state"]["window-contents"]["values"]
