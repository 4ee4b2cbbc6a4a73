"""How long `statectl diff` takes on small savepoints: tables confirmed identical in the process
against every table compared by Spark's joins (`--engine spark`, what `diff` always did before).

The savepoint is the suite's Flink 2.3 SQL job's (RocksDB canonical: 11 keyed operators, 24
tables; from its cache, or made once). Two comparisons, each timed as whole `statectl`
processes in turns (auto, spark, auto, spark, ...): the savepoint against a copy of itself, and
against itself rescaled to max parallelism 128 (`--content-only`). Prints the median wall and
CPU seconds (the process and its children: the JVM, Python workers), the ratio and the load average
before and after.

    python bench/bench_diff.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATECTL = str(Path(sys.executable).parent / "statectl")
sys.path.insert(0, str(REPO / "bench"))
from common import TreeCpuSampler, load_average  # noqa: E402


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one `statectl` process and its descendants (the JVM and the Python
    workers, sampled: they escape ``getrusage``); *env* is added to this process's. It must exit 0."""
    start = time.monotonic()
    proc = subprocess.Popen([STATECTL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env} if env else None)
    sampler = TreeCpuSampler(proc.pid)
    out, err = proc.communicate()
    wall, cpu = time.monotonic() - start, sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"statectl {' '.join(args)} exited {proc.returncode}:\n{out}{err}")
    return wall, cpu


def sql_job_savepoint() -> Path:
    """The suite's Flink 2.3 SQL job's RocksDB canonical savepoint (from its cache, or made once)."""
    sys.path.insert(0, str(REPO / "tests"))
    from support import flink_job

    return Path(flink_job.make_sql_snapshot("2.3.0", backend="rocksdb", format="canonical").path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    base = sql_job_savepoint()
    work = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    try:
        copy = work / "copy"
        shutil.copytree(base, copy)
        timed(["rescale", str(base), str(work / "rescaled"), "--max-parallelism", "128"])
        cases = {"a copy": [str(base), str(copy)],
                 "rescaled, --content-only": [str(base), str(work / "rescaled"), "--content-only"]}
        print(f"statectl diff of the SQL job's savepoint ({base}), {repeat} turns each; "
              f"load average before: {load_average()}")
        for name, args in cases.items():
            runs = {"auto": [], "spark": []}
            for _ in range(repeat):
                runs["auto"].append(timed(["diff", *args]))
                runs["spark"].append(timed(["diff", *args, "--engine", "spark"]))
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
            print(f"  {name}: auto {med['auto'][0]:.2f} s wall / {med['auto'][1]:.2f} s CPU; "
                  f"--engine spark {med['spark'][0]:.2f} s / {med['spark'][1]:.2f} s; "
                  f"ratio wall {med['auto'][0] / med['spark'][0]:.3f}, CPU {med['auto'][1] / med['spark'][1]:.3f}")
        print(f"load average after: {load_average()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
