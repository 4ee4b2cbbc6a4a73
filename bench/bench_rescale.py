"""Rescale throughput: a keyed operator with N keys to a new max parallelism,
beside a plain Spark read + write of the same rows as Parquet, in the same run.

* baseline: ``spark.read.parquet(<the operator's keyed files>).write.parquet(...)``
* rescale:  ``statectl.writers.rescale.rescale`` 128 -> 256 key groups (files checked,
  every key re-grouped in the JVM, shuffled to its new key-group chunk, sorted,
  written, checksummed, committed)
* parallelism only: the same savepoint at another parallelism (metadata only)

The three run in turns (baseline, rescale, parallelism only, baseline, ...) for ``--rounds``
rounds; prints each round's times and its ratio rescale / baseline, the medians, the median
of the rounds' ratios and the ratio of the medians (target: at most 1.5), and the load average
before and after the rounds. ``--keys 100000`` is a quick run.

``--flink``: the operator (the same String key, Long value and String list per key) is written
as a canonical Flink savepoint, and two ways of rescaling it 128 -> 256 run in turns:

* baseline, decode + encode: every entry read into the operator's tables and written again by
  the Flink writer's encoders (the path of a heap-native base);
* bytes: the entries moved as their bytes, only each key decoded to place it
  (``writers/flink/regroup.py``, what ``rescale`` does for key/value-pair bases);

and prints the medians and the ratio bytes / decode + encode.

    python bench/bench_rescale.py [--keys 5000000] [--rounds 3] [--flink]
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

from common import load_average, session


def build_base(spark, path: str, keys: int):
    from statectl.writers import KeyedData, ListState, OperatorData, SavepointWriter, ValueState

    rows = spark.range(keys).selectExpr(
        "concat('user-', CAST(id AS STRING)) AS user", "id AS count",
        "concat('event-', CAST(id % 1000 AS STRING)) AS event")
    writer = SavepointWriter.new(max_parallelism=128).with_operator(OperatorData(
        "proc", parallelism=2, keyed=KeyedData(key=["user"], data=rows, states=[
            ValueState("count", column="count"), ListState("events", column="event")])))
    return writer.write(path, spark).savepoint


def build_flink_base(spark, path: str, keys: int):
    from statectl.writers import KeyedData, ListState, OperatorData, SavepointWriter, ValueState

    rows = spark.range(keys).selectExpr(
        "concat('user-', CAST(id AS STRING)) AS user", "id AS count",
        "concat('event-', CAST(id % 1000 AS STRING)) AS event")
    SavepointWriter.new(format="flink").with_operator(OperatorData(
        "proc", parallelism=2, max_parallelism=128, keyed=KeyedData(key=["user"], data=rows, states=[
            ValueState("count", column="count"), ListState("events", column="event")]))).write(path, spark)


def flink_rounds(spark, work: str, keys: int, rounds: int) -> None:
    """``--flink``: rescale a Flink savepoint by decode + encode and by its entries' bytes, in turns."""
    from statectl.writers.flink import rescale as flink_rescale
    from statectl.writers.rescale import rescale

    start = time.perf_counter()
    build_flink_base(spark, f"{work}/base", keys)
    print(f"base: {keys:,} keys, a canonical Flink savepoint, built in {time.perf_counter() - start:.0f} s")
    by_bytes = flink_rescale.regroupable

    def run(name: str, regroupable, run_id: int) -> float:
        flink_rescale.regroupable = regroupable  # which way this run moves the keyed state
        try:
            t = time.perf_counter()
            rescale(spark, f"{work}/base", f"{work}/{name}-{run_id}", 256)
            return time.perf_counter() - t
        finally:
            flink_rescale.regroupable = by_bytes
            shutil.rmtree(f"{work}/{name}-{run_id}", ignore_errors=True)

    print(f"load average before: {load_average()}")
    coded, moved = [], []
    for r in range(rounds):
        coded.append(run("coded", lambda op: False, r))
        moved.append(run("bytes", by_bytes, r))
        print(f"round {r + 1}: decode + encode {coded[-1]:.1f} s, bytes {moved[-1]:.1f} s; "
              f"bytes / decode + encode {moved[-1] / coded[-1]:.2f}")
    print(f"load average after: {load_average()}")
    c, m = statistics.median(coded), statistics.median(moved)
    print(f"median of {rounds} rounds: decode + encode {c:.1f} s ({keys / c:,.0f} keys/s), "
          f"bytes {m:.1f} s ({keys / m:,.0f} keys/s); bytes / decode + encode {m / c:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--rounds", "--runs", type=int, default=3,
                        help="rounds, the rescale and its baseline in turns (default 3)")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--flink", action="store_true",
                        help="a Flink savepoint: rescale by decode + encode against by its entries' bytes")
    args = parser.parse_args()

    from statectl.statefmt.locations import file_location
    from statectl.writers.rescale import rescale

    spark = session("bench-rescale", driver_memory=args.driver_memory,
                    extra_conf={"spark.sql.shuffle.partitions": "8"})
    work = tempfile.mkdtemp(prefix="bench-rescale-")
    try:
        if args.flink:
            flink_rounds(spark, work, args.keys, args.rounds)
            return
        start = time.perf_counter()
        base = build_base(spark, f"{work}/base", args.keys)
        files = [str(file_location(base, f.ref)) for f in base.operator("proc").keyed.files]
        rows = sum(f.rows for f in base.operator("proc").keyed.files)
        size = sum(f.size for f in base.operator("proc").keyed.files)
        print(f"base: {rows:,} keys, {len(files)} keyed files, {size / 2**20:.0f} MiB, "
              f"built in {time.perf_counter() - start:.0f} s")

        print(f"load average before: {load_average()}")
        plain, rescaled, metadata_only = [], [], []
        for run in range(args.rounds):
            t = time.perf_counter()
            spark.read.parquet(*files).write.parquet(f"{work}/plain-{run}")
            plain.append(time.perf_counter() - t)

            t = time.perf_counter()
            rescale(spark, base.location, f"{work}/rescaled-{run}", 256)
            rescaled.append(time.perf_counter() - t)

            t = time.perf_counter()
            rescale(spark, base.location, f"{work}/p-{run}", 128, parallelism=4)
            metadata_only.append(time.perf_counter() - t)
            print(f"round {run + 1}: plain read+write {plain[-1]:.1f} s, rescale {rescaled[-1]:.1f} s, "
                  f"parallelism only {metadata_only[-1]:.2f} s; rescale / plain {rescaled[-1] / plain[-1]:.2f}")
            for d in (f"{work}/plain-{run}", f"{work}/rescaled-{run}", f"{work}/p-{run}"):
                shutil.rmtree(d, ignore_errors=True)

        print(f"load average after: {load_average()}")
        p, r, m = (statistics.median(x) for x in (plain, rescaled, metadata_only))
        print(f"median of {args.rounds} rounds: plain read+write {p:.1f} s ({rows / p:,.0f} rows/s), "
              f"rescale {r:.1f} s ({rows / r:,.0f} rows/s), parallelism only {m:.2f} s")
        ratio = statistics.median(b / a for a, b in zip(plain, rescaled))
        print(f"rescale / plain: median of the rounds' ratios {ratio:.2f}, ratio of the medians {r / p:.2f} "
              f"(target <= 1.5)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
