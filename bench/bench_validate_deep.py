"""`validate --deep` against a full read, whole processes, on the 1M-key Flink savepoint.

    python bench/bench_validate_deep.py [--keys 1000000] [--repeat 3]

Takes the Flink 2.3 canonical and RocksDB-native savepoints of ``bench_flink_read.py``
(the suite's job in size mode: 1M String keys, a value and a list state; made once, then
cached) and times, as whole processes in alternating runs: `statectl validate` (sizes
only), `statectl validate --deep` (every stream decoded, in-process) and `statectl sql` of
a count and sums over every column (the full read through Spark, the baseline). Prints the
medians, the ratio deep / full read per format, and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_flink_read import flink_savepoints  # noqa: E402
from common import load_average  # noqa: E402

QUERY = "SELECT count(*), sum(length(key)), sum(count), sum(size(events)) FROM proc"


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    paths = flink_savepoints(args.keys)
    load_before = load_average()
    for name, path in paths.items():
        commands = {
            "validate (sizes)": ["statectl", "validate", str(path)],
            "validate --deep": ["statectl", "validate", "--deep", str(path)],
            "sql full read": ["statectl", "sql", str(path), QUERY],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.repeat + 1):  # the first round warms caches and is not counted
            for k, cmd in commands.items():
                times[k].append(timed(cmd))
        medians = {k: statistics.median(v[1:]) for k, v in times.items()}
        print(f"{name}, {args.keys:,} keys, median of {args.repeat} whole processes:")
        for k, m in medians.items():
            print(f"  {k:18s} {m:7.2f} s   ({', '.join(f'{t:.2f}' for t in times[k][1:])})")
        print(f"  deep / full read: {medians['validate --deep'] / medians['sql full read']:.2f}")
    print(f"load average {load_before} before, {load_average()} after")


if __name__ == "__main__":
    main()
