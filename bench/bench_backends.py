"""State access of the heap and RocksDB backends, and native vs canonical reads into Spark.

Part 1 (no Spark): per backend, value-state updates and gets, list appends and
map puts/gets per second over K keys, through the public handle API (a
``set_current_key`` before each access, as a job does), plus snapshot and
restore times of the result. The heap backend is the baseline: the two are
measured in turns (heap, RocksDB, heap, RocksDB, ...), ``--rounds`` rounds, each
round printed with the ratios RocksDB / heap, then the medians and the median
of the rounds' ratios.

Part 2 (``--spark``): the same state snapshotted as canonical Parquet and as
native RocksDB files by two subtasks, then each read into Spark in full
(``write.format("noop")``) through ``readers``, after one untimed read of each,
canonical and native in turns for ``--rounds`` rounds: each round's seconds and
rows/s, the medians and the median of the rounds' ratios of native throughput
to canonical.

Each part prints the load average at the start and the end of its measurement.

    python bench/bench_backends.py [--keys 100000] [--ops 200000] [--rounds 3] [--spark]
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

from common import load_average, session

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


SECONDS = ("canonical snapshot (s)", "restore (s)")  # the other figures are ops/s


def measure(cls, keys: int, ops: int, workdir: str) -> dict[str, float]:
    """One backend's round: the accesses' ops/s, then the canonical snapshot's and the
    restore's seconds."""
    b, rows = access(cls, keys, ops, workdir)
    out = os.path.join(workdir, "sp")
    start = time.perf_counter()
    sp = commit_snapshots(out, [b.snapshot(out)])
    rows[SECONDS[0]] = time.perf_counter() - start
    b.close()
    start = time.perf_counter()
    cls.restore(sp, "bench", subtask=0, parallelism=1).close()
    rows[SECONDS[1]] = time.perf_counter() - start
    return rows


def report(title: str, heap: dict[str, float], rocksdb: dict[str, float], ratios: dict[str, float]) -> None:
    print(f"{title:<30} {'heap':>12} {'RocksDB':>12} {'RocksDB / heap':>15}")
    for name in heap:
        shown = "{:12.2f}" if name in SECONDS else "{:12,.0f}"
        print(f"  {name:<28} {shown.format(heap[name])} {shown.format(rocksdb[name])} {ratios[name]:15.2f}")


def backends(args, tmp: str) -> None:
    """Part 1: heap and RocksDB in turns, each round printed, then the medians."""
    print(f"{args.keys:,} keys, {args.ops:,} random accesses per measure (ops/s; snapshot and restore "
          f"in s), heap and RocksDB in turns, {args.rounds} rounds; load average before: {load_average()}")
    rounds = []
    for r in range(args.rounds):
        pair = []
        for cls in (HeapBackend, RocksDBBackend):
            workdir = os.path.join(tmp, f"{cls.__name__}-{r}")
            pair.append(measure(cls, args.keys, args.ops, workdir))
            shutil.rmtree(workdir, ignore_errors=True)
        heap, rocksdb = pair
        rounds.append((heap, rocksdb, {name: rocksdb[name] / heap[name] for name in heap}))
        report(f"round {r + 1}", *rounds[-1])
    print(f"load average after: {load_average()}")
    medians = [{name: statistics.median(row[i][name] for row in rounds) for name in rounds[0][0]}
               for i in range(3)]  # heap, RocksDB, and the median of the rounds' ratios
    report(f"median of {args.rounds} rounds", *medians)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--ops", type=int, default=200_000)
    p.add_argument("--spark", action="store_true", help="also time reads into Spark")
    p.add_argument("--rounds", "--repeat", type=int, default=3,
                   help="rounds of each part, the subject and its baseline in turns (default 3)")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-backends-")
    try:
        backends(args, tmp)
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

    def read(path: str) -> float:
        reader = open_savepoint(spark, path)  # fresh: files checked each time, untimed
        start = time.perf_counter()
        reader.keyed("bench").write.format("noop").mode("overwrite").save()
        return time.perf_counter() - start

    for path in paths.values():  # warm-up
        read(path)
    print(f"\nread into Spark (full scan, noop sink), canonical and native in turns, {args.rounds} rounds; "
          f"load average before: {load_average()}")
    times = {fmt: [] for fmt in paths}
    for r in range(args.rounds):
        for fmt, path in paths.items():
            times[fmt].append(read(path))
        print(f"  round {r + 1}: " + ", ".join(f"{fmt} {t[-1]:.2f} s ({args.keys / t[-1]:,.0f} rows/s)"
                                                for fmt, t in times.items())
              + f"; native / canonical throughput {times['canonical'][-1] / times['rocksdb'][-1]:.2f}")
    print(f"load average after: {load_average()}")
    for fmt, t in times.items():
        m = statistics.median(t)
        print(f"  median {fmt:<10} {m:6.2f} s  {args.keys / m:>12,.0f} rows/s")
    ratio = statistics.median(c / n for c, n in zip(times["canonical"], times["rocksdb"]))
    print(f"  native / canonical throughput, median of the rounds' ratios: {ratio:.2f}")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
