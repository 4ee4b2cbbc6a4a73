"""A `statectl bootstrap --format flink` killed with SIGKILL (statectl, its JVM and its workers,
as a crash or an OOM killer would) at several moments of its write never leaves a `_metadata`,
so no half-written savepoint can be restored; its inputs are byte-identical afterwards, and a
rerun into the same folder writes the whole savepoint."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from statectl.readers import open_savepoint
from support.cli_runner import statectl
from support.savepoint_rows import files_below, tree_digest

pytestmark = pytest.mark.slow  # killed statectl processes and real Flink restores

KEYS = 300_000
SUBTASKS = 4


def _stream_files(out: Path) -> list[str]:
    return [p for p in files_below(out) if p != "_metadata" and not p.startswith("_writing-")]


# When to kill, as a condition on the output folder (and seconds waited once it holds).
MOMENTS = {
    "write begun": (lambda out: any(p.startswith("_writing-") for p in files_below(out)), 0.0),
    "first stream file": (lambda out: len(_stream_files(out)) >= 1, 0.0),
    "half the stream files": (lambda out: len(_stream_files(out)) >= SUBTASKS // 2, 0.0),
    "a random moment": (lambda out: any(p.startswith("_writing-") for p in files_below(out)),
                        random.Random(13).uniform(0.2, 2.0)),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    pq.write_table(pa.table({"user": [f"u{i}" for i in range(KEYS)], "n": pa.array(range(KEYS), pa.int64())}),
                   folder / "in.parquet")
    (folder / "spec.yaml").write_text(
        f"format: flink\noperators:\n  - uid: p\n    parallelism: {SUBTASKS}\n"
        "    keyed: {key: user, input: in.parquet, states: [{name: n, kind: value, column: n}]}\n")
    return folder


def _kill_at(spec: Path, out: Path, moment: str) -> None:
    """Start the bootstrap in a session of its own and SIGKILL the whole session at *moment*."""
    reached, wait = MOMENTS[moment]
    # a Spark of its own, killed with it (a warm server interrupts a dead command's operation:
    # tests/cli/test_engine.py)
    proc = subprocess.Popen(["statectl", "bootstrap", "--spec", str(spec), str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "STATECTL_ENGINE": "classic"})
    deadline = time.monotonic() + 300
    try:
        while not reached(out):
            assert proc.poll() is None, f"the bootstrap ended before {moment}"
            assert time.monotonic() < deadline, f"the bootstrap stalled before {moment}"
            time.sleep(0.02)
        time.sleep(wait)
        assert proc.poll() is None, f"the bootstrap ended before it was killed at {moment}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_killed_flink_bootstraps_leave_no_metadata_and_a_rerun_writes_it_all(spark, inputs, tmp_path):
    before = tree_digest(inputs)
    out = tmp_path / "out"
    for moment in MOMENTS:
        _kill_at(inputs / "spec.yaml", out, moment)
        assert not (out / "_metadata").exists(), moment
        assert tree_digest(inputs) == before, moment
    result = statectl("bootstrap", "--spec", str(inputs / "spec.yaml"), str(out))
    assert result.returncode == 0, result.stderr
    assert "left by an earlier write that did not finish" in result.stdout
    assert len(_stream_files(out)) == SUBTASKS and (out / "_metadata").exists()
    rows = open_savepoint(spark, str(out)).keyed("p")
    assert (rows.count(), rows.agg({"n": "sum"}).collect()[0][0]) == (KEYS, KEYS * (KEYS - 1) // 2)
    assert tree_digest(inputs) == before
