"""Reading keyed state vs plain Parquet: 5M keys, read and aggregated, in the same run.

    python bench/bench_read.py [--keys 5000000] [--runs 5] [--out bench/out/read]

Builds (once) a savepoint whose operator ``counter`` holds one row per key
(key ``user_id`` and four keyed states), then times, alternating runs:

* statectl  ``open_savepoint(...).keyed("counter")`` (the files' sizes,
  checksums and footers checked first) and an aggregation;
* parquet   ``spark.read.parquet`` of the very same files, same aggregation;
* parquet (Spark-written)  ``spark.read.parquet`` of the same rows written by
  ``df.write.parquet``, same aggregation.

Prints the median times, rows/s and the ratio of throughputs (target >= 0.8), with the load
average before and after the runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from common import alternating_medians, load_average, session

from statectl.statefmt.build import write_keyed_files  # noqa: E402
from statectl.statefmt.fs import Location  # noqa: E402
from statectl.statefmt.ids import operator_id_for_uid  # noqa: E402
from statectl.statefmt.model import Field, KeyedSection, KeyedStateDescriptor, Operator, Savepoint  # noqa: E402
from statectl.statefmt.formats import load  # noqa: E402
from statectl.statefmt.locations import file_location  # noqa: E402
from statectl.statefmt.formats import commit  # noqa: E402
from statectl.statefmt.savepoint import new_savepoint_id, now_iso  # noqa: E402

UID = "counter"
STATES = (
    KeyedStateDescriptor("count", "value", "int64"),
    KeyedStateDescriptor("total", "reducing", "float64", function="sum"),
    KeyedStateDescriptor("name", "value", "string"),
    KeyedStateDescriptor("last_seen", "value", {"timestamp": {"unit": "us", "tz": "UTC"}}),
)


def build(path: Path, keys: int, parallelism: int = 4, max_parallelism: int = 128) -> Savepoint:
    import pyarrow.compute as pc

    section = KeyedSection((Field("user_id", "int64"),), STATES)
    ids = pa.array(range(keys), pa.int64())
    table = pa.table({
        "user_id": ids,
        "count": pc.multiply(ids, 3),
        "total": pc.divide(pc.cast(ids, pa.float64()), 7.0),
        "name": pc.binary_join_element_wise("user-", pc.cast(ids, pa.string()), ""),
        "last_seen": pc.cast(pc.add(pc.multiply(ids, 1000), 1_700_000_000_000_000),
                             pa.timestamp("us", tz="UTC")),
    })
    op_id = operator_id_for_uid(UID)
    out = Location.of(str(path))
    files = write_keyed_files(out, op_id, section, table, max_parallelism, parallelism)
    section = KeyedSection(section.key, section.states, files)
    sp = Savepoint(new_savepoint_id(), now_iso(),
                   (Operator(op_id, UID, parallelism, max_parallelism, section),))
    return commit(sp, out)


def aggregate(df):
    from pyspark.sql import functions as F

    return df.groupBy((F.col("user_id") % 1000).alias("bucket")).agg(
        F.count("*").alias("keys"), F.sum("count").alias("count"), F.avg("total").alias("total"),
        F.max(F.length("name")).alias("name"), F.max("last_seen").alias("last_seen"),
    ).orderBy("bucket").collect()


def executor_check(spark, sp_dir: Path, runs: int) -> list[float]:
    from statectl.readers.files import splits
    from statectl.readers.verify import verify_splits
    from statectl.statefmt.canonical import keyed_schema

    sp = load(str(sp_dir))
    keyed = sp.operator(UID).keyed
    parts = splits(sp, keyed.files, keyed_schema(keyed))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        verify_splits(spark, parts, in_executors=True)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "read"))
    args = ap.parse_args()

    root = Path(args.out) / f"keys-{args.keys}"
    sp_dir = root / "savepoint"
    if not (sp_dir / "_metadata").exists():
        t = time.perf_counter()
        build(sp_dir, args.keys)
        print(f"built savepoint with {args.keys:,} keys in {time.perf_counter() - t:.1f} s")
    sp = load(str(sp_dir))
    files = [str(file_location(sp, f.ref)) for f in sp.operator(UID).keyed.files]
    size = sum(f.size for f in sp.operator(UID).keyed.files)
    print(f"{len(files)} files, {size / 2**20:.1f} MiB")

    from statectl.readers import open_savepoint

    spark = session("bench-read", arrow=False, extra_conf={"spark.sql.shuffle.partitions": "8"})
    spark_copy = root / "spark-parquet"
    if not spark_copy.exists():
        spark.read.parquet(*files).drop("_key_group").write.parquet(str(spark_copy))

    verify_times: list[float] = []

    def statectl_run():
        t = time.perf_counter()
        df = open_savepoint(spark, str(sp_dir)).keyed(UID)
        verify_times.append(time.perf_counter() - t)
        return aggregate(df)

    cases = {
        "statectl keyed": statectl_run,
        "parquet (same files)": lambda: aggregate(spark.read.parquet(*files)),
        "parquet (Spark-written)": lambda: aggregate(spark.read.parquet(str(spark_copy))),
    }
    results = {name: fn() for name, fn in cases.items()}  # warm-up, and the answers agree
    assert results["statectl keyed"] == results["parquet (same files)"] == \
        results["parquet (Spark-written)"], "the three reads disagree"
    verify_times.clear()
    load_before = load_average()
    times, medians = alternating_medians(cases, args.runs)

    print(f"{args.keys:,} keys, read + aggregate, median of {args.runs} runs (local[2]), "
          f"load average {load_before} before, {load_average()} after:")
    for name, m in medians.items():
        spread = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"  {name:26s} {m:6.2f} s  {args.keys / m / 1e6:5.2f} M rows/s   ({spread})")
    print(f"  (of which the integrity check, in driver threads as in any local mode: "
          f"median {statistics.median(verify_times):.2f} s)")
    print(f"  (the same check as a Spark job in executors, as on a cluster: "
          f"median {statistics.median(executor_check(spark, sp_dir, args.runs)):.2f} s)")
    ours = medians["statectl keyed"]
    for name in ("parquet (same files)", "parquet (Spark-written)"):
        print(f"throughput ratio statectl / {name}: {medians[name] / ours:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
