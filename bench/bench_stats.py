"""`statectl stats` of the 1M-key Flink savepoints against `info` and a full local `read`, whole processes.

    python bench/bench_stats.py [--keys 1000000] [--repeat 3]

Takes the Flink 2.3 canonical and RocksDB-native savepoints of ``bench_flink_read.py`` (the
suite's job in size mode: String keys, a ValueState<Long> and a ListState<String>; made once,
then cached) and times, as whole processes in alternating runs after one round not counted:
`statectl stats SP --json` (every split decoded once in this process: the target is at most
2 s with no JVM), `statectl stats SP` (the charts), `statectl info SP` (metadata and headers
only: the floor) and `statectl read SP --uid proc --format parquet --output OUT` (the full
local read, batches written as they decode: the baseline). Prints each run, the medians, the
ratios stats / info and stats / read, and the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_flink_read import flink_savepoints  # noqa: E402
from bench_validate_deep import timed  # noqa: E402
from common import load_average  # noqa: E402


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
            times: dict[str, list[float]] = {k: [] for k in commands}
            for _ in range(args.repeat + 1):  # the first round warms caches and is not counted
                for k, cmd in commands.items():
                    times[k].append(timed(cmd))
            medians = {k: statistics.median(v[1:]) for k, v in times.items()}
            print(f"{name}, {args.keys:,} keys, {size / 2**20:.0f} MiB; median of {args.repeat} whole processes:")
            for k, m in medians.items():
                print(f"  {k:15s} {m:7.2f} s   ({', '.join(f'{t:.2f}' for t in times[k][1:])})")
            stats = medians["stats --json"]
            print(f"  stats / info {stats / medians['info']:.2f}x, stats / read {stats / medians['read (local)']:.2f}x"
                  f" (target: stats <= 2 s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end:   {load_average()}")


if __name__ == "__main__":
    main()
