"""State access of the heap and RocksDB backends, and native vs canonical reads into Spark.

Part 1 (no Spark): per backend, value-state updates and gets, list appends and
map puts/gets per second over K keys, through the public handle API (a
``set_current_key`` before each access, as a job does), plus snapshot and
restore times of the result.

Part 2 (``--spark``): the same state snapshotted as canonical Parquet and as
native RocksDB files by two subtasks, then each read into Spark in full
(``write.format("noop")``, median of ``--repeat``) through ``readers``: rows/s.

    python bench/bench_backends.py [--keys 100000] [--ops 200000] [--spark] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import session

from statectl.backends import HeapBackend, RocksDBBackend, commit_snapshots

MAX_P = 128


def timed(n: int, fn) -> float:
    start = time.perf_counter()
    fn()
    return n / (time.perf_counter() - start)


def access(cls, keys: int, ops: int, workdir: str) -> dict:
    opts = {"workdir": os.path.join(workdir, "db")} if cls is RocksDBBackend else {}
    b = cls.create("bench", subtask=0, parallelism=1, max_parallelism=MAX_P,
                   key=[("user", "string")], **opts)
    count = b.value_state("count", "int64")
    recent = b.list_state("recent", "string")
    tags = b.map_state("tags", "string", "int64")
    rnd = random.Random(1)
    users = [f"user-{i}" for i in range(keys)]
    picks = [users[rnd.randrange(keys)] for _ in range(ops)]
    out = {}

    def fill():
        for u in users:
            b.set_current_key(u)
            count.update(1)
    out["insert (value)"] = timed(keys, fill)

    def update():
        for u in picks:
            b.set_current_key(u)
            count.update(count.value(0) + 1)
    out["get+update (value)"] = timed(ops, update)

    def get():
        for u in picks:
            b.set_current_key(u)
            count.value()
    out["get (value)"] = timed(ops, get)

    def append():
        for u in picks:
            b.set_current_key(u)
            recent.add("event")
    out["append (list)"] = timed(ops, append)

    def put():
        for i, u in enumerate(picks):
            b.set_current_key(u)
            tags.put(f"t{i % 8}", i)
    out["put (map)"] = timed(ops, put)

    def map_get():
        for i, u in enumerate(picks):
            b.set_current_key(u)
            tags.get(f"t{i % 8}")
    out["get (map)"] = timed(ops, map_get)
    return b, out


def report(title: str, rows: dict) -> None:
    print(f"\n{title}")
    for name, value in rows.items():
        print(f"  {name:<28} {value:>12,.0f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--ops", type=int, default=200_000)
    p.add_argument("--spark", action="store_true", help="also time reads into Spark")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-backends-")
    try:
        print(f"{args.keys:,} keys, {args.ops:,} random accesses per measure (ops/s)")
        for cls in (HeapBackend, RocksDBBackend):
            b, rows = access(cls, args.keys, args.ops, os.path.join(tmp, cls.__name__))
            out = os.path.join(tmp, f"sp-{cls.__name__}")
            start = time.perf_counter()
            sp = commit_snapshots(out, [b.snapshot(out)])
            snap = time.perf_counter() - start
            b.close()
            start = time.perf_counter()
            cls.restore(sp, "bench", subtask=0, parallelism=1).close()
            report(f"{cls.__name__}: canonical snapshot {snap:.2f} s, restore {time.perf_counter() - start:.2f} s", rows)
        if args.spark:
            spark_reads(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def spark_reads(args, tmp: str) -> None:
    from statectl.readers import open_savepoint

    subtasks = [RocksDBBackend.create("bench", subtask=i, parallelism=2, max_parallelism=MAX_P,
                                      key=[("user", "string")]) for i in range(2)]
    for b in subtasks:
        b.count = b.value_state("count", "int64")
        b.recent = b.list_state("recent", "string")
    start = time.perf_counter()
    for i in range(args.keys):
        u = f"user-{i}"
        b = subtasks[0] if subtasks[0].key_group_of(u) <= subtasks[0].last_group else subtasks[1]
        b.set_current_key(u)
        b.count.update(i)
        b.recent.update([f"e{i % 7}", "x"])
    fill = time.perf_counter() - start
    paths = {}
    for fmt in ("canonical", "rocksdb"):
        out = os.path.join(tmp, f"read-{fmt}")
        start = time.perf_counter()
        paths[fmt] = commit_snapshots(out, [b.snapshot(out, format=fmt) for b in subtasks]).location
        print(f"\n{fmt} snapshot of {args.keys:,} keys by 2 subtasks: {time.perf_counter() - start:.2f} s"
              f" (filled in {fill:.2f} s)")
    for b in subtasks:
        b.close()
    spark = session(driver_memory=None)
    print(f"\nread into Spark (full scan, noop sink, median of {args.repeat}):")
    for fmt, path in paths.items():
        times = []
        for _ in range(args.repeat):
            reader = open_savepoint(spark, path)  # fresh: files checked each time
            start = time.perf_counter()
            reader.keyed("bench").write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        print(f"  {fmt:<10} {t:6.2f} s  {args.keys / t:>12,.0f} rows/s")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
