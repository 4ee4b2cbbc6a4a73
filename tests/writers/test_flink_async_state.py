"""A job with asynchronous state (Flink 2.3, ForSt, `enableAsyncState()`, state v2:
`tests/async_state_job/`: value, map and list state v2) can take native savepoints only. Its savepoint read by statectl holds
the job's counts; rescaled 128 -> 256 -> 128 by statectl (native, as the base), each step is
restored by the job with exactly the state it saved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statectl.statefmt.flink.savepoint import open_flink_savepoint
from support.cli_runner import statectl
from support.java_programs import java

pytestmark = pytest.mark.slow  # four Flink runs and two Spark writes

MAIN = "asyncstatejob.Main"
KEYS = 40


def _expected() -> dict[str, str]:
    """The job's state per key: "count even odd seen" (a parity no event had is null; seen: the
    events' numbers in order)."""
    out = {}
    for i in range(KEYS):
        events = i % 5 + 1
        even, odd = (events + 1) // 2, events // 2
        out[f"k-{i:02d}"] = f"{events} {even} {odd or 'null'} {','.join(map(str, range(events)))}"
    return out


def _restored(savepoint: Path, max_parallelism: int, out: Path) -> dict[str, str]:
    out.mkdir()
    java("async_state_job", MAIN, "restore", str(savepoint), str(max_parallelism), str(out))
    return dict(line.split(" ", 1) for line in (out / "restored.txt").read_text().splitlines())


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("async-state")
    (work / "save").mkdir()
    java("async_state_job", MAIN, "save", str(work / "save"))
    return Path((work / "save" / "savepoint.txt").read_text().removeprefix("file:"))


def test_statectl_reads_the_async_jobs_state(saved):
    result = statectl("read", str(saved), "--uid", "proc", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    rows = {r["key"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert {k: f"{r['count']} {r['by-parity'].get('even')} {r['by-parity'].get('odd') or 'null'} {','.join(r['seen'])}"
            for k, r in rows.items()} == _expected()


def test_rescaled_async_state_restores_into_the_job(saved, tmp_path):
    assert _restored(saved, 128, tmp_path / "as-saved") == _expected()
    source = saved
    for max_p in (256, 128):
        target = tmp_path / f"maxp-{max_p}"
        result = statectl("rescale", str(source), str(target), "--max-parallelism", str(max_p))
        assert result.returncode == 0, result.stderr
        proc = open_flink_savepoint(target).operator("proc")
        assert proc.keyed_layout == "rocksdb-native" and proc.max_parallelism == max_p
        assert _restored(target, max_p, tmp_path / f"restored-{max_p}") == _expected(), max_p
        source = target
