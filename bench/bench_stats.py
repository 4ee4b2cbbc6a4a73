"""`statectl stats` of the 1M-key Flink savepoints against `info` and a full local `read`, whole processes.

    python bench/bench_stats.py [--keys 1000000] [--repeat 3]

Takes the Flink 2.3 canonical and RocksDB-native savepoints of ``bench_flink_read.py`` (the
suite's job in size mode: String keys, a ValueState<Long> and a ListState<String>; made once,
then cached) and times, as whole processes in alternating runs after one round not counted:
`statectl stats SP --json` (every split decoded once in this process: the target is at most
2 s with no JVM), `statectl stats SP` (the charts), `statectl info SP` (metadata and headers
only: the floor) and `statectl read SP --uid proc --format parquet --output OUT` (the full
local read, batches written as they decode: the baseline). Prints each run, the medians, the
ratios stats / info and stats / read, and the load average at the start and the end. Beside
each wall time, the process's CPU time (user + system), which a busy shared machine does not
stretch.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_flink_read import flink_savepoints  # noqa: E402
from common import load_average  # noqa: E402


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process: user + system) of one run of *cmd*. The CPU
    time does not grow when other work on a shared machine takes the cores; the wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    script = Path(sys.executable).with_name("statectl")
    statectl = str(script) if script.exists() else "statectl"
    paths = flink_savepoints(args.keys)
    work = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    print(f"load average at start: {load_average()}")
    try:
        for name, path in paths.items():
            size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
            commands = {
                "stats --json": [statectl, "stats", str(path), "--json", "--parallelism", "3"],
                "stats (charts)": [statectl, "stats", str(path), "--parallelism", "3"],
                "info": [statectl, "info", str(path)],
                "read (local)": [statectl, "read", str(path), "--uid", "proc", "--format", "parquet",
                                 "--output", str(work / "out"), "--overwrite"],
            }
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
            for _ in range(args.repeat + 1):  # the first round warms caches and is not counted
                for k, cmd in commands.items():
                    times[k].append(timed(cmd))
            wall = {k: statistics.median(w for w, _ in v[1:]) for k, v in times.items()}
            cpu = {k: statistics.median(c for _, c in v[1:]) for k, v in times.items()}
            print(f"{name}, {args.keys:,} keys, {size / 2**20:.0f} MiB; median of {args.repeat} whole processes:")
            for k in commands:
                runs = ", ".join(f"{w:.2f}" for w, _ in times[k][1:])
                print(f"  {k:15s} wall {wall[k]:6.2f} s ({runs})   CPU {cpu[k]:6.2f} s")
            stats = "stats --json"
            print(f"  stats / info: wall {wall[stats] / wall['info']:.2f}x, CPU {cpu[stats] / cpu['info']:.2f}x; "
                  f"stats / read: wall {wall[stats] / wall['read (local)']:.2f}x, "
                  f"CPU {cpu[stats] / cpu['read (local)']:.2f}x (target: stats <= 2 s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end:   {load_average()}")


if __name__ == "__main__":
    main()
