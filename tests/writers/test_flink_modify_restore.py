"""A real Flink 2.3 restores what `statectl modify` wrote from savepoints and a retained checkpoint
the suite's job made: every operator renamed `X` -> `p-X` and restored by the job run with uid
prefix `p-` (canonical from either backend into the other, RocksDB native, an incremental
checkpoint's shared files), a shallow copy moved elsewhere, a self-contained copy whose base is
deleted, copies without stateless operators or without a stateful one; a shallow copy whose base
is deleted is refused by Flink. All restores of one outcome run in one JVM."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support import flink_job
from support.cli_runner import statectl_process
from support.cli_runner import statectl
from support.flink_shapes import HASHMAP_CANONICAL, INCREMENTAL, SHAPES
from support.savepoint_rows import digest
from support.flink_fixes import renamed_expected

pytestmark = pytest.mark.slow  # real Flink restores

VERSION = "2.3.0"
PREFIX = "p-"
UIDS = ("src", "rules-src", "union-op", "bcast", "proc", "win", "snk")
RENAME_ALL = [a for uid in UIDS for a in ("--rename", f"{uid}={PREFIX}{uid}")]


@dataclass
class Case:
    shape: str
    args: list[str]
    backend: str  # restored with
    prefix: str = ""
    copy_base: bool = True  # modify a copy of the snapshot (a retained checkpoint cannot move)
    after: str = ""  # "move": move the output; "delete-base": delete the base copy
    base_digest: tuple = field(default_factory=tuple)


SNAPSHOTS = {"rocksdb-canonical": SHAPES["rocksdb-canonical"], "hashmap-canonical": HASHMAP_CANONICAL,
             "rocksdb-native": SHAPES["rocksdb-native"], "incremental-checkpoint": INCREMENTAL}
CASES = {
    "canonical-rocksdb-moved": Case("rocksdb-canonical", RENAME_ALL, "hashmap", PREFIX, after="move"),
    "canonical-hashmap": Case("hashmap-canonical", RENAME_ALL, "rocksdb", PREFIX),
    "native-rocksdb": Case("rocksdb-native", RENAME_ALL, "rocksdb", PREFIX),
    "incremental-checkpoint": Case("incremental-checkpoint", RENAME_ALL, "rocksdb", PREFIX, copy_base=False),
    "self-contained-base-deleted": Case("rocksdb-canonical", [*RENAME_ALL, "--self-contained"], "hashmap",
                                        PREFIX, after="delete-base"),
    "without-stateless": Case("hashmap-canonical", ["--remove", "snk", "--remove", "rules-src"], "hashmap"),
    "without-win": Case("rocksdb-canonical", ["--remove", "win"], "rocksdb"),
}


def make_case(name: str, case: Case, snap, tmp: Path) -> flink_job.Snapshot:
    work = tmp / name
    work.mkdir()
    if case.copy_base:
        base = work / "base"
        shutil.copytree(snap.path, base)
        watched = base
    else:
        base, watched = snap.path, snap.path.parent
    before = digest(watched)
    out = work / "modified"
    result = statectl("modify", str(base), str(out), *case.args)
    assert result.returncode == 0, result.stderr
    case.base_digest = (watched, before)
    if case.after == "move":
        moved = work / "elsewhere" / "moved"
        moved.parent.mkdir()
        out.rename(moved)
        out = moved
    elif case.after == "delete-base":
        shutil.rmtree(base)
    return flink_job.Snapshot(out, renamed_expected(snap.expected, case.prefix), work)


@pytest.fixture(scope="module")
def restored(flink_snapshots, tmp_path_factory):
    """{case: (expected, dump)}: every case's modified savepoint restored, in one JVM."""
    snaps = dict(zip(SNAPSHOTS, flink_snapshots(VERSION, list(SNAPSHOTS.values()))))
    tmp = tmp_path_factory.mktemp("flink-modify")
    made = {name: make_case(name, case, snaps[case.shape], tmp) for name, case in CASES.items()}
    for case in CASES.values():
        if case.after != "delete-base":
            watched, before = case.base_digest
            assert digest(watched) == before  # the base is never written
    dumps = flink_job.restore_snapshots(VERSION, [(made[n], CASES[n].backend) for n in CASES])
    return {n: (made[n].expected, d) for n, d in zip(CASES, dumps)}


@pytest.mark.parametrize("name", [n for n in CASES if n != "without-win"])
def test_restores_with_exactly_the_state(restored, name):
    expected, dump = restored[name]
    assert flink_job.restore_mismatches(expected, dump) == []
    assert set(dump["operators"]) >= {CASES[name].prefix + u for u in ("src", "union-op", "bcast", "proc", "win")}
    proc = dump["operators"][CASES[name].prefix + "proc"]
    assert len(proc["keyed_state"]["count"]["values"]) == int(expected["scenario"]["knobs"]["keys"])


def test_removing_a_stateful_operator_restores_it_empty(restored):
    """Flink does not refuse a savepoint lacking an operator the job declares: `win` starts empty."""
    expected, dump = restored["without-win"]
    problems = flink_job.restore_mismatches(expected, dump)
    assert [p.split(":")[0] for p in problems] == ["win windows fired", "win window timers fired"]
    assert all(p.endswith("restored []") for p in problems)


def test_a_shallow_copy_without_its_base_is_refused(flink_snapshots, tmp_path):
    """statectl names the gone base in one line; Flink fails to restore (the file is not found)."""
    snap = flink_snapshots(VERSION, [SHAPES["rocksdb-canonical"]])[0]
    base, out = tmp_path / "base", tmp_path / "modified"
    shutil.copytree(snap.path, base)
    assert statectl("modify", str(base), str(out), *RENAME_ALL).returncode == 0
    base_id = json.loads(statectl("info", "--json", str(base)).stdout)["savepoint_id"]
    shutil.rmtree(base)
    report = statectl_process("validate", "--json", str(out))
    assert report.returncode == 1
    assert json.loads(report.stdout)["problems"] == [
        f"{out}: savepoint {base_id} at {base}, which this one references, is gone"]
    with pytest.raises(flink_job.FlinkJobError) as failed:
        flink_job.restore(VERSION, out, tmp_path / "restore",
                          **{**SHAPES["rocksdb-canonical"], "backend": "hashmap", "uid_prefix": PREFIX})
    assert f"{base}/" in str(failed.value)
