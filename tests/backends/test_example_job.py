"""The example job killed with SIGKILL at random moments ends with exactly the output of an
uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from statectl.backends import HeapBackend

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "examples" / "job" / "job.py"
sys.path.insert(0, str(JOB.parent))
from make_events import make_events  # noqa: E402
from job import latest_checkpoint  # noqa: E402


def run(events, work, backend, tmpdir=None):
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir else None
    return subprocess.Popen([sys.executable, str(JOB), "--events", str(events), "--work", str(work),
                             "--backend", backend, "--checkpoint-every", "40"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("job")
    events = base / "events.csv"
    make_events(str(events), n=800, users=20, seed=11)
    p = run(events, base / "ref", "heap")
    assert p.wait(timeout=120) == 0, p.stderr.read()
    return events, (base / "ref" / "result.txt").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("backend,kills", [("rocksdb", 4), ("heap", 3)])
def test_killed_job_ends_with_exactly_once_output(reference, tmp_path, backend, kills):
    events, expected = reference
    work = tmp_path / "w"
    tmpdir = tmp_path / "tmp"  # the runs' temporary directory: killed runs leave nothing there
    tmpdir.mkdir()
    # The job's last step is writing result.txt: while it is a named pipe nobody reads, a run that
    # got through all its input and committed its last checkpoint waits there, so every kill finds
    # the job still running, however fast it went (it never finishes on its own before the kill).
    work.mkdir()
    result = work / "result.txt"
    os.mkfifo(result)
    rnd = random.Random(backend)
    # kill while (or just after) writing checkpoints picked at random among the first 15 of 21,
    # or, if the job outran the wait before the kill, while it waits to write its result
    for target in sorted(rnd.sample(range(2, 16), kills)):
        p = run(events, work, backend, tmpdir)
        try:
            cp = work / "checkpoints" / f"cp-{target:06d}"
            deadline = time.monotonic() + 60
            while not cp.exists() and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(rnd.uniform(0, 0.05))
            assert p.poll() is None, p.stderr.read()  # held before finishing: it cannot have ended
            os.kill(p.pid, signal.SIGKILL)
            assert p.wait(timeout=60) == -signal.SIGKILL  # the job died part-way, by the kill
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
    assert result.is_fifo()  # no killed run wrote a result
    result.unlink()
    assert latest_checkpoint(str(work)) is not None  # and the next run restores
    p = run(events, work, backend, tmpdir)
    assert p.wait(timeout=120) == 0, p.stderr.read()
    assert (work / "result.txt").read_text() == expected
    assert list(tmpdir.iterdir()) == [] and not (work / "local").exists()
    # the last checkpoint holds every user's count
    lines = Path(events).read_text().splitlines()
    counts = Counter(line.split(",")[1] for line in lines)
    cp = latest_checkpoint(str(work))
    seen = {}
    for i in range(3):  # restored at another parallelism than the job's
        with HeapBackend.restore(cp, "user-activity", subtask=i, parallelism=3) as b:
            count = b.value_state("count", "int64")
            for (user,), _ in b.keys("count"):
                b.set_current_key(user)
                seen[user] = count.value()
    assert seen == counts
