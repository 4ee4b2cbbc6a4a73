"""Bootstrap throughput: keyed value + list state for N keys vs a plain Parquet write.

All write the same rows (one per key: a string key, a bigint, a string) in
the same run, alternating, on the same Spark session:

* plain:     ``df.write.parquet(...)``
* shuffle:   the same rows with their key group and chunk tag computed as the
  bootstrap computes them, hash-repartitioned to the task of their key-group
  chunk (the writer's ``Chunks.distribute``) and written by
  ``df.write.parquet``, with no grouping and no sort: the least any writer
  that must bring each key's rows together pays here
* sorted:    the rows the bootstrap's Spark plan hands its writing tasks
  (shuffled by key-group chunk and sorted by key group and key; the tasks
  group them per key), written by ``df.write.parquet`` instead: the same
  Spark work, to tell it from the tasks' grouping and writing
* grouped:   the keyed rows grouped per key by a Spark aggregate (the plan
  used for states other than value and unordered list), written by
  ``df.write.parquet``
* bootstrap: ``SavepointWriter`` -> keyed table (value state ``count``, list
  state ``events``), partitioned by key group, sorted, checksummed, committed.
* native:    the same bootstrap in the native format (``format="rocksdb"``):
  one RocksDB database per subtask, built by one task per subtask.

With ``--timers`` both bootstraps also write one event-time timer per key
(column ``ts``), through the same shuffle as the keyed rows.

Prints the time and rows/s of each run, the ratios of the medians, and the
driver's memory (Python RSS sampled during the runs, and the JVM's heap), and the load average
before and after the runs.

    python bench/bench_write.py [--keys 5000000] [--runs 3] [--timers]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import RssSampler, load_average, session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--timers", action="store_true",
                        help="the bootstraps also write one event-time timer per key")
    args = parser.parse_args()

    import warnings

    warnings.filterwarnings("ignore")
    from statectl.statefmt.model import KEY_GROUP_COLUMN
    from statectl.writers import KeyedData, ListState, OperatorData, SavepointWriter, Timers, \
        ValueState
    from statectl.writers.job import JOB_CONF
    from statectl.writers.own.keyed import plan_keyed
    from statectl.writers.own.operators import target_tasks
    from statectl.writers.partitioning import Chunks
    from statectl.writers.sql import checked_key_group_sql

    spark = session("bench-write", "local[*]")
    jvm = spark.sparkContext._jvm
    runtime = jvm.java.lang.Runtime.getRuntime()
    df = spark.range(args.keys).selectExpr(
        "concat('user-', CAST(id AS STRING)) AS user", "id * 7 % 100000 AS n",
        "concat('event-', CAST(id % 1000 AS STRING)) AS event")
    work = tempfile.mkdtemp(prefix="bench-write-")
    keyed = KeyedData(key=["user"], data=df, states=[ValueState("count", column="n"),
                                                     ListState("events", column="event")])
    timed = KeyedData(key=["user"], data=df.selectExpr("*", "1700000000000 + n * 1000 AS ts"),
                      states=keyed.states,
                      timers=[Timers("event", column="ts")]) if args.timers else keyed
    chunks = Chunks.plan(128, args.parallelism, target_tasks(spark))
    grouped = plan_keyed(keyed, "proc", 128, chunks).table
    sorted_rows = plan_keyed(keyed, "proc", 128, chunks, group_in_tasks=True).table
    # shuffle only: the rows tagged as the bootstrap tags them (statectl.writers.own.keyed._state_table),
    # sent to the task of their key-group chunk; nothing grouped, nothing sorted
    shuffled = chunks.distribute(df.selectExpr(
        "*", f"{checked_key_group_sql(['user'], 128, 'bench')} AS {KEY_GROUP_COLUMN}"), keep_tag=True)
    spark_only = {"shuffle": shuffled, "sorted": sorted_rows, "grouped": grouped}
    times = {"plain": [], "shuffle": [], "sorted": [], "grouped": [], "bootstrap": [], "native": []}
    print(f"{args.keys:,} keys, one row each; operator parallelism {args.parallelism}, "
          f"{spark.sparkContext.defaultParallelism} cores, {args.runs} runs each "
          "(after one warm-up of each)" + ("; the bootstraps with a timer per key" if args.timers else "")
          + f"; load average before: {load_average()}")
    samplers = []
    try:
        for run in range(args.runs + 1):
            for name in times:
                out = os.path.join(work, f"{name}-{run}")
                with RssSampler() as rss:
                    t = time.perf_counter()
                    if name == "plain":
                        df.write.parquet(out)
                    elif name in spark_only:
                        for k, v in JOB_CONF.items():
                            spark.conf.set(k, v)
                        spark_only[name].write.parquet(out)
                        for k in JOB_CONF:
                            spark.conf.unset(k)
                    else:
                        fmt = "rocksdb" if name == "native" else "canonical"
                        SavepointWriter.new(max_parallelism=128, format=fmt).with_operator(
                            OperatorData("proc", args.parallelism, keyed=timed)).write(out, spark)
                    elapsed = time.perf_counter() - t
                size = sum(os.path.getsize(os.path.join(r, f))
                           for r, _, fs in os.walk(out) for f in fs)
                shutil.rmtree(out)
                label = "warm-up" if run == 0 else f"run {run}"
                print(f"  {label:8} {name:9} {elapsed:7.2f} s  {args.keys / elapsed:12,.0f} rows/s  "
                      f"{size / 2**20:8.1f} MiB  driver RSS {rss.start:6.0f} -> peak {rss.peak:6.0f}"
                      f" MiB")
                if run:
                    times[name].append(elapsed)
                    samplers.append((name, rss))
        print(f"load average after: {load_average()}")
        med = {name: statistics.median(t) for name, t in times.items()}
        print("median: " + ", ".join(f"{name} {t:.2f} s ({args.keys / t:,.0f} rows/s)"
                                     for name, t in med.items()))
        print(f"ratio (bootstrap throughput / shuffle-only throughput): "
              f"{med['shuffle'] / med['bootstrap']:.2f}  <- target >= 0.7")
        print(f"ratio (bootstrap throughput / plain Parquet throughput): "
              f"{med['plain'] / med['bootstrap']:.2f}")
        print(f"ratio (bootstrap throughput / Spark writing the rows its tasks receive): "
              f"{med['sorted'] / med['bootstrap']:.2f}")
        print(f"ratio (bootstrap throughput / Spark writing rows grouped by an aggregate): "
              f"{med['grouped'] / med['bootstrap']:.2f}")
        print(f"ratio (native bootstrap throughput / canonical bootstrap throughput): "
              f"{med['bootstrap'] / med['native']:.2f}  <- target >= 0.6")
        print(f"ratio (shuffle-only throughput / plain Parquet throughput): "
              f"{med['plain'] / med['shuffle']:.2f}  <- the most any key-grouping writer can reach here")
        for kind in ("bootstrap", "native"):
            peaks = [r.peak for n, r in samplers if n == kind]
            starts = [r.start for n, r in samplers if n == kind]
            print(f"driver (Python) RSS during {kind} runs: start {min(starts):.0f} MiB, "
                  f"peak {max(peaks):.0f} MiB (growth {max(peaks) - min(starts):.0f} MiB)")
        used = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
        print(f"JVM heap in use at the end (driver + local executors): {used:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
