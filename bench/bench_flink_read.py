"""Reading Flink savepoints vs statectl's own format: 1M String keys, in the same run.

    python bench/bench_flink_read.py [--keys 1000000] [--repeat 3] [--out bench/out/flink-read]

Takes (from the suite's cache, or makes with the suite's Flink job, Flink 2.3,
RocksDB backend, size mode) two savepoints of operator ``proc``: String keys
``user-%07d``, a ValueState<Long> ``count`` and a ListState<String> ``events``,
one in Flink's canonical format and one RocksDB native. The canonical one is
read once and bootstrapped with ``SavepointWriter`` into statectl's own
canonical format (untimed), so the three hold the very same rows. Then, in
alternating runs, each is read with ``open_savepoint(spark, path).keyed("proc")``
and aggregated: every column decoded (key lengths, the sum of ``count``, list
sizes and the sum of the lists' second elements). The three answers must be
equal. Prints the median times, rows/s, the throughput ratios Flink / own
(targets: canonical >= 0.5, native >= 0.3) with the load average, the CPU seconds
each read took in the JVM and in Spark's Python workers (which, unlike the times,
do not depend on what else the shared machine runs) and the driver's peak RSS.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from common import RssSampler, alternating_medians, load_average, rss_mib, session  # noqa: E402

UID = "proc"
TARGETS = {"flink canonical": 0.5, "flink rocksdb native": 0.3}


def flink_savepoints(keys: int) -> dict[str, Path]:
    """The two Flink savepoints of *keys* keys (made once by the suite's job, then cached)."""
    from support import flink_job

    specs = [dict(mode="size", keys=keys, backend="rocksdb", format=fmt)
             for fmt in ("canonical", "native")]
    t = time.perf_counter()
    canonical, native = flink_job.make_snapshots("2.3.0", specs)
    print(f"Flink savepoints ready in {time.perf_counter() - t:.1f} s "
          f"(made once, then cached under {flink_job.snapshot_cache()})")
    for snap in (canonical, native):
        assert snap.expected["size"]["keys"] == keys
    return {"flink canonical": canonical.path, "flink rocksdb native": native.path}


def own_savepoint(spark, flink_canonical: Path, out: Path) -> Path:
    """statectl's own canonical savepoint of the rows read from the Flink canonical one."""
    from pyspark.sql import functions as F

    from statectl import open_savepoint
    from statectl.writers import KeyedData, ListState, OperatorData, SavepointWriter, ValueState

    if (out / "_metadata").exists():
        return out
    t = time.perf_counter()
    rows = open_savepoint(spark, str(flink_canonical)).keyed(UID).select("key", "count", "events")
    elements = rows.select("key", F.posexplode("events").alias("pos", "element"))
    writer = SavepointWriter.new(max_parallelism=128)
    writer.with_operator(OperatorData(UID, parallelism=2, keyed=KeyedData(
        key=["key"], data=rows,
        states=[ValueState("count", column="count"),
                ListState("events", column="element", data=elements, order_by="pos")])))
    writer.write(str(out), spark)
    print(f"bootstrapped statectl's own savepoint in {time.perf_counter() - t:.1f} s")
    return out


def aggregate(df) -> tuple:
    """Every column decoded: one row of totals."""
    from pyspark.sql import functions as F

    row = df.agg(
        F.count("*").alias("rows"),
        F.sum(F.length("key")).alias("key_chars"),
        F.sum("count").alias("count_sum"),
        F.sum(F.size("events")).alias("elements"),
        F.sum(F.element_at("events", 2).cast("long")).alias("second_sum"),
    ).collect()[0]
    return tuple(row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "flink-read"))
    args = ap.parse_args()

    paths = flink_savepoints(args.keys)

    from statectl import open_savepoint

    spark = session("bench-flink-read", arrow=False)
    own = own_savepoint(spark, paths["flink canonical"], Path(args.out) / f"keys-{args.keys}" / "own")
    cases = {"statectl own canonical": own, **paths}

    def run(path: Path) -> tuple:
        return aggregate(open_savepoint(spark, str(path)).keyed(UID))

    answers = {name: run(path) for name, path in cases.items()}  # warm-up; the answers agree
    n = args.keys
    want = (n, n * len("user-0000000"), n * (n - 1) // 2, 2 * n, n * (n - 1) // 2)
    for name, got in answers.items():
        assert got == want, f"{name}: {got} != {want}"
    print(f"all three reads give rows, key chars, sum(count), list elements, sum(events[2]) = {want}")

    before = rss_mib()
    cpu: dict[str, list[dict[str, float]]] = {}
    load_before = load_average()
    with RssSampler() as rss:
        times, medians = alternating_medians(
            {name: (lambda path=path: run(path)) for name, path in cases.items()}, args.repeat, cpu)

    print(f"{n:,} keys (value + list state), read + aggregate, median of {args.repeat} (local[2]), "
          f"load average {load_before} before, {load_average()} after:")
    for name, m in medians.items():
        spread = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"  {name:24s} {m:6.2f} s  {n / m:11,.0f} rows/s   ({spread})")
    ours = medians["statectl own canonical"]
    for name, target in TARGETS.items():
        ratio = ours / medians[name]
        verdict = "met" if ratio >= target else "MISSED"
        print(f"throughput ratio {name} / own canonical: {ratio:.2f} (target >= {target}: {verdict})")
    print("CPU seconds per run (median; JVM, Python workers, driver), independent of the load:")
    medians_cpu = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for name, runs in cpu.items()}
    for name, c in medians_cpu.items():
        print(f"  {name:24s} {c['jvm'] + c['workers']:6.2f} s  (JVM {c['jvm']:.2f}, workers {c['workers']:.2f}, "
              f"driver {c['driver']:.2f})")
    own_cpu = medians_cpu["statectl own canonical"]
    for name in TARGETS:
        c = medians_cpu[name]
        print(f"CPU ratio {name} / own canonical: "
              f"{(own_cpu['jvm'] + own_cpu['workers']) / (c['jvm'] + c['workers']):.2f}")
    print(f"driver RSS: {before:.0f} MiB before the timed runs, peak {rss.peak:.0f} MiB, "
          f"after {rss.end:.0f} MiB")
    spark.stop()


if __name__ == "__main__":
    main()
