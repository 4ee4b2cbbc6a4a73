"""Native Flink writes: a rescale of a native savepoint (RocksDB on Flink 1.17, 1.20 and 2.3, ForSt
on 2.3) writes its keyed operators as native RocksDB snapshots (`statefmt/flink/native_write.py`),
which read the same rows as the base, TTL timestamps included, and which real Flink restores into
the backend that made the base with exactly the job's state: 128 -> 256 and back to 128. A fix of a
native base is native and restores with the fix; `bootstrap --native` writes a new native savepoint
Flink restores; `--canonical` writes key-group streams."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.flink.handles import IncrementalRocksDB, KeyGroupsStream
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.savepoint_write import NATIVE_TRAILER
from support import flink_job
from support.cli_runner import statectl
from support.flink_fixes import PROC, WRITTEN, fix_spec, fixed_description
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


# --- a fix of a native base, a new native savepoint, the layout chosen ------------------------------

FIXTURE = "long-rocksdb-native"
NEW_SPEC = """
format: flink
operators:
  - uid: cnt
    parallelism: 2
    max_parallelism: 128
    flink: {key: String, states: {n: Integer}}
    keyed: {key: id, input: {path: counts.csv, schema: "id string, n int"},
            states: [{name: n, kind: value, column: n}]}
"""
COUNTS = {f"user-{i:02d}": i * 1000 - 7 for i in range(1, 21)}
NEW_DESCRIPTION = {"operators": [{"uid": "cnt", "parallelism": 2, "max_parallelism": 128, "key_type": "String",
                                  "keyed_state": [{"name": "n", "kind": "VALUE", "type": "Integer"}]}]}


def _native_operators(path) -> set[str]:
    """The operator ids of *path* whose keyed state is a native RocksDB snapshot."""
    return {op.operator_id for op in open_flink_savepoint(path).metadata.operators
            for s in op.subtasks if isinstance(s.managed_keyed, IncrementalRocksDB)}


@pytest.fixture(scope="module")
def fixes(tmp_path_factory):
    """A fix of the native fixture (native, as its base), a new --native savepoint, a --canonical
    rescale of the fixture, and Flink 2.3's restores of the first two (and of the base)."""
    work = tmp_path_factory.mktemp("native-fixes")
    base = work / "base"
    shutil.copytree(flink_job.FIXTURES / FIXTURE / "savepoint", base)
    (work / "fix.yaml").write_text(fix_spec(f"uid: {PROC}", PROC, 3))
    (work / "new.yaml").write_text(NEW_SPEC)
    (work / "counts.csv").write_text("id,n\n" + "".join(f"{k},{v}\n" for k, v in COUNTS.items()))
    runs = {"fixed": ("bootstrap", str(work / "fixed"), "--base", str(base), "--format", "flink",
                      "--spec", str(work / "fix.yaml")),
            "new": ("bootstrap", str(work / "new"), "--spec", str(work / "new.yaml"), "--native"),
            "canonical": ("rescale", str(base), str(work / "canonical"), "--max-parallelism", "128", "--canonical")}
    for args in runs.values():
        result = statectl(*args)
        assert result.returncode == 0, result.stderr
    full = flink_job.job_description(flink_job.fixture_expected(FIXTURE))
    dumps = flink_job.restore_declared_many("2.3.0", [
        (base, full, "rocksdb"), (work / "fixed", fixed_description(full), "rocksdb"),
        (work / "new", NEW_DESCRIPTION, "rocksdb"), (work / "new", NEW_DESCRIPTION, "forst")])
    return {"paths": {name: work / name for name in ("base", *runs)},
            "dumps": dict(zip(("base", "fixed", "new", "new-forst"), dumps))}


@pytest.mark.slow
def test_a_fix_of_a_native_base_is_native_and_restores_with_the_fix(fixes):
    paths, dumps = fixes["paths"], fixes["dumps"]
    base_native = _native_operators(paths["base"])
    proc = open_flink_savepoint(paths["base"]).operator(PROC).operator_id
    assert proc in base_native and _native_operators(paths["fixed"]) == base_native
    base, fixed = dumps["base"]["operators"], dumps["fixed"]["operators"]
    want = {n: copy.deepcopy(s) for n, s in base[PROC]["keyed_state"].items() if n in WRITTEN}
    want["count"]["values"] = {k: v + 1 if int(k) % 2 == 0 else v for k, v in want["count"]["values"].items()}
    assert fixed[PROC]["keyed_state"] == want
    for uid in ("lk-src", "lk-bcast", "lk-win"):
        assert fixed[uid] == base[uid], uid


@pytest.mark.slow
def test_a_new_native_savepoint_restores_into_rocksdb_and_forst(fixes):
    """One native layout serves both backends: the same files restore into RocksDB and ForSt."""
    paths, dumps = fixes["paths"], fixes["dumps"]
    assert len(_native_operators(paths["new"])) == 1
    for name in ("new", "new-forst"):
        assert dumps[name]["operators"]["cnt"]["keyed_state"]["n"]["values"] == COUNTS, name


@pytest.mark.slow
def test_canonical_asks_for_key_group_streams(fixes):
    sp = open_flink_savepoint(fixes["paths"]["canonical"])
    keyed = [s.managed_keyed for op in sp.metadata.operators for s in op.subtasks if s.managed_keyed is not None]
    assert keyed and all(isinstance(h, KeyGroupsStream) and h.layout == "canonical" for h in keyed)
    assert sp.metadata.trailer != NATIVE_TRAILER


def test_native_for_statectls_own_output_is_one_line_and_writes_nothing(tmp_path):
    spec = Path(__file__).parents[2] / "examples" / "spec.yaml"
    for flag in ("--native", "--canonical"):
        result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"), flag)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            f"error: {flag} chooses the layout of a Flink savepoint's keyed state; this write's "
            "output is statectl's canonical"]
        assert not (tmp_path / "out").exists()
