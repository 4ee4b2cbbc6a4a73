"""Bootstrap as a Flink canonical savepoint vs statectl's own canonical format, same rows, same run.

N keys (a String key, a Long value state ``count``, a String list state ``events``), written
by ``SavepointWriter`` in both formats on one Spark session, alternating:

* canonical: statectl's own format (Parquet files sorted by key group, checksummed)
* flink:     ``format="flink"``: Flink's key-group hash, the values encoded as Flink's
  serializers write them, one keyed stream per subtask, `_metadata` last

Prints each run's time and rows/s, the medians, and flink's throughput as a share of
canonical's (the target is at least 0.5), and the load average before and after the runs.

    python bench/bench_flink_write.py [--keys 1000000] [--runs 3] [--parallelism 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import alternating_medians, load_average, session, user_events_operator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=4)
    args = parser.parse_args()

    import warnings

    warnings.filterwarnings("ignore")
    from statectl.writers import SavepointWriter

    spark = session("bench-flink-write", "local[*]")
    op = user_events_operator(spark, args.keys, args.parallelism)
    work = tempfile.mkdtemp(prefix="bench-flink-write-")
    runs = {"n": 0}

    def write(fmt: str):
        def run():
            runs["n"] += 1
            out = os.path.join(work, f"{fmt}-{runs['n']}")
            SavepointWriter.new(format=fmt).with_operator(op).write(out, spark)
            shutil.rmtree(out)
        return run

    load_before = load_average()
    try:
        times, medians = alternating_medians({"canonical": write("canonical"), "flink": write("flink")},
                                             args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.keys:,} keys, {args.runs} runs each, alternating; "
          f"load average {load_before} before, {load_average()} after")
    for name, ts in times.items():
        print(f"{name:10s} " + "  ".join(f"{t:6.1f} s ({args.keys / t / 1e3:6.0f}k rows/s)" for t in ts))
    print(f"median: canonical {medians['canonical']:.1f} s, flink {medians['flink']:.1f} s; "
          f"flink throughput = {medians['canonical'] / medians['flink']:.2f} x canonical (target >= 0.5)")


if __name__ == "__main__":
    main()
