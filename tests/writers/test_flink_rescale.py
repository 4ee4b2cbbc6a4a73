"""`statectl rescale` of savepoints a real Flink 2.3 job made: 128 -> 256 (Long keys, heap
backend) and 256 -> 4096 -> 128 (String keys, RocksDB, parallelism 3). The rescaled savepoints
read the same rows as the base (key groups aside), every key sits in the group Flink's hash gives
for the new max parallelism, the base is never written, and Flink restores each into both
backends with exactly the job's state when run at the new max parallelism. Keys Flink's hash
cannot be computed for are refused in one line."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import key_java_type
from statectl.statefmt.flink.keyhash import flink_key_groups
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.tables import key_fields
from statectl.statefmt.errors import UsageError
from statectl.writers.flink.source import operator_binding
from support.cli_runner import statectl
from support.flink_shapes import HASHMAP_CANONICAL, SHAPES
from support.savepoint_rows import digest

sys.path.insert(0, str(Path(__file__).parents[1]))
from support import flink_job  # noqa: E402

VERSION = "2.3.0"
# name: (the job's snapshot, the max parallelisms it is rescaled to in turn)
CASES = {
    "long-128-to-256": (HASHMAP_CANONICAL, (256,)),
    "string-256-to-4096-to-128": (SHAPES["rocksdb-canonical"], (4096, 128)),
}


@pytest.fixture(scope="module")
def snapshots(flink_snapshots):
    """{case: the job's snapshot} (cached: the refusals below need nothing else)."""
    return dict(zip(CASES, flink_snapshots(VERSION, [s for s, _ in CASES.values()])))


@pytest.fixture(scope="module")
def rescaled(snapshots, tmp_path_factory):
    """{case: (the job's snapshot, the base's copy, [(max parallelism, rescaled savepoint), ...])}."""
    snaps = snapshots
    out = {}
    for name, (_, steps) in CASES.items():
        work = tmp_path_factory.mktemp(name)
        base = work / "base"
        shutil.copytree(snaps[name].path, base)
        before = digest(base)
        source, done = base, []
        for max_p in steps:
            target = work / f"maxp-{max_p}"
            result = statectl("rescale", str(source), str(target), "--max-parallelism", str(max_p))
            assert result.returncode == 0, result.stderr
            done.append((max_p, target))
            source = target
        assert digest(base) == before  # the base is never written
        out[name] = (snaps[name], base, done)
    return out


def _rows(df) -> list[str]:
    """Every row, TTL timestamps included (a rescale keeps them)."""
    return sorted(json.dumps(r.asDict(True), sort_keys=True, default=str) for r in df.collect())


def _flink_groups(df, key: T.FlinkType, max_p: int) -> list[int]:
    """Flink's key group of each row of *df* (its key columns), computed in Python."""
    names = [f.name for f in key_fields(key)]
    table = pa.Table.from_pylist([r.asDict(True) for r in df.select(*names).collect()])
    cols = [table.column(n).combine_chunks() for n in names]
    keys = pa.StructArray.from_arrays(cols, names=[f"f{i}" for i in range(len(cols))]) \
        if isinstance(key, T.Tuple) else cols[0]
    return flink_key_groups(keys, key_java_type(key, "key"), max_p).tolist()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_rescaled_savepoints_read_the_same_rows_in_flinks_key_groups(spark, rescaled, name):
    _, base, done = rescaled[name]
    a = open_savepoint(spark, str(base))
    source = open_flink_savepoint(base)
    for max_p, path in done:
        mine = open_flink_savepoint(path)
        b = open_savepoint(spark, str(path))
        checked = 0
        for op in source.operators:
            got = mine.operator(op.uid)
            if op.keyed_header is None:
                assert got.max_parallelism == max_p  # a shallow copy, its max parallelism the job's
                continue
            assert (got.max_parallelism, got.parallelism) == (max_p, op.parallelism)
            assert got.keyed_header.key == op.keyed_header.key
            assert sorted((s.name, s.value) for s in got.keyed_header.states) == \
                sorted((s.name, s.value) for s in op.keyed_header.states)
            for table in ("keyed", "timers"):
                before = getattr(a, table)(op.uid)
                after = getattr(b, table)(op.uid, include_key_group=True)
                assert _rows(after.drop("_key_group")) == _rows(before)
                rows = after.collect()
                assert rows  # every keyed table of the job holds rows
                assert [r["_key_group"] for r in rows] == _flink_groups(after, op.keyed_header.key, max_p)
                checked += 1
        assert checked == 4  # proc and win, keyed state and timers
        for op in source.operators:
            for state in op.operator_states:
                assert _rows(b.operator_state(op.uid, state)) == _rows(a.operator_state(op.uid, state))


def _at_max_parallelism(expected: dict, max_p: int) -> dict:
    out = copy.deepcopy(expected)
    out["scenario"]["knobs"]["max-parallelism"] = str(max_p)
    return out


@pytest.mark.slow
def test_rescaled_savepoints_restore_in_flink_into_both_backends(rescaled):
    items = [(flink_job.Snapshot(path, _at_max_parallelism(snap.expected, max_p), path.parent / f"restore-{max_p}"),
              backend)
             for name, (snap, _, done) in sorted(rescaled.items()) for max_p, path in done
             for backend in ("hashmap", "rocksdb")]
    dumps = flink_job.restore_snapshots(VERSION, items)
    for (snap, backend), dump in zip(items, dumps):
        assert flink_job.restore_mismatches(snap.expected, dump) == [], (snap.path, backend)
        proc = dump["operators"]["proc"]
        assert len(proc["keyed_state"]["count"]["values"]) == int(snap.expected["scenario"]["knobs"]["keys"])
        assert sum(map(len, proc["timers"]["event_time"]["values"].values())) > 0
        assert dump["operators"]["win"]["keyed_state"]["window-contents"]["values"]


def test_keys_flinks_hash_cannot_place_are_refused(snapshots):
    """A POJO or Row key has a Java hashCode of its class: it is refused in one line."""
    base = snapshots["long-128-to-256"].path
    proc = open_flink_savepoint(base).operator("proc")
    pojo = T.Pojo("a.User", (("name", T.String("org.apache.flink.api.common.typeutils.base.StringSerializer")),),
                  (), "org.apache.flink.api.java.typeutils.runtime.PojoSerializer")
    with pytest.raises(UsageError) as refused:
        operator_binding(dataclasses.replace(proc, keyed_header=dataclasses.replace(proc.keyed_header, key=pojo)))
    assert str(refused.value) == (
        "operator 'proc': a POJO a.User key cannot be written: Flink places keys by their Java hashCode, "
        "which is known here only for String, Long, Integer, Short, Byte, Boolean, Character, Double, Float "
        "and tuples of these")


def test_limits_are_refused_before_spark_starts(snapshots, tmp_path):
    base = snapshots["string-256-to-4096-to-128"].path
    result = statectl("rescale", str(base), str(tmp_path / "out"), "--max-parallelism", "2")
    assert (result.returncode, result.stderr.strip().splitlines()) == (1, [
        "error: operator proc runs at parallelism 3, more than the new max parallelism 2; "
        "give a new parallelism too"])
    result = statectl("rescale", str(base), str(tmp_path / "out"), "--max-parallelism", "256", "--uid", "src")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: operator src has no keyed state to rescale; keyed operators: proc, win"]
    assert not (tmp_path / "out").exists()
