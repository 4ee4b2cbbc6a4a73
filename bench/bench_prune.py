"""`statectl prune --expired-at` of a 1M-key Flink savepoint with half its TTL entries expired,
against a `statectl rescale` of the same savepoint: whole processes, in the same run.

    python bench/bench_prune.py [--keys 1000000] [--repeat 3] [--keep DIR]

The savepoint (Flink 2.3's canonical format, written once by ``SavepointWriter(format="flink")``,
max parallelism 128, parallelism 2) has a Long key and per key a TTL ``ValueState<String>``
``last``, a plain ``ValueState<Long>`` ``count`` and, for every fourth key, a TTL
``MapState<String, Long>`` ``seen`` of two entries; last-access times are spread evenly over
1000 s, so with a TTL of 1000 s the time ``T0 + 1500 s`` has exactly half of them expired.

- A, prune: ``statectl prune SP OUT --expired-at T --ttl 1000s`` (reads each TTL entry's
  timestamp in its bytes, drops the expired ones, moves the rest as their bytes);
- B, rescale: ``statectl rescale SP OUT --max-parallelism 256`` (moves the entries as their bytes).

After one untimed run of each, whose outputs are read back in this process (no Spark: A must hold
exactly the live entries, B every entry), the counted runs alternate (A B A B ...). Prints each
side's median wall and CPU seconds of its whole process tree, the ratios A / B (target <= 1.5)
and the load average before and after. Never part of the suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_flink_sql_rescale import run, statectl_script  # noqa: E402
from common import load_average, session  # noqa: E402

TARGET = 1.5  # prune seconds / rescale seconds
T0 = 1_700_000_000_000
SPREAD_MS = TTL_MS = 1_000_000
NOW = T0 + SPREAD_MS // 2 + TTL_MS  # last access <= T0 + SPREAD/2: expired
PRUNE, RESCALE = "prune", "rescale"


def build(path: Path, keys: int) -> None:
    """The savepoint: see the module doc."""
    from statectl.writers import KeyedData, MapState, OperatorData, SavepointWriter, ValueState
    from statectl.writers.flink.binding import parse_binding

    spark = session("bench-prune-build", "local[2]")
    stamp = f"{T0} + (id * 7919) % {SPREAD_MS}"  # a permutation of the spread: even
    values = spark.range(keys).selectExpr("id AS k", "concat('event-', CAST(id % 1000 AS STRING)) AS v",
                                          f"{stamp} AS v_ts", "id * 7 AS n")
    seen = spark.range(0, keys, 4).selectExpr("id AS k", "explode(array('a', 'b')) AS mk", "id AS mv",
                                              f"{stamp} AS mv_ts")
    binding = parse_binding({"key": "Long", "states": {"last": {"type": "String", "ttl": True}, "count": "Long",
                                                       "seen": {"type": "Long", "ttl": True, "key": "String"}}},
                            "flink")
    keyed = KeyedData(["k"], (ValueState("last", "v", values, ttl_column="v_ts"), ValueState("count", "n", values),
                              MapState("seen", "mk", "mv", seen, ttl_column="mv_ts")))
    SavepointWriter.new(format="flink").with_operator(OperatorData("proc", 2, 128, keyed, flink=binding)) \
        .write(str(path), spark)
    spark.stop()


def answer(path: Path) -> tuple[int, int, int, int]:
    """(max parallelism, keys, `last` values, `seen` entries) of proc, decoded in this process."""
    from statectl.readers.local import local_table
    from statectl.readers.resolve import KEYED, TableChoice
    from statectl.statefmt.formats import load

    sp = load(str(path))
    op = sp.operator("proc")
    table = local_table(sp, TableChoice(op, KEYED))
    return (op.max_parallelism, table.num_rows, table.num_rows - table.column("last").null_count,
            sum(len(chunk.keys) for chunk in table.column("seen").chunks))


def expected(keys: int) -> dict[str, tuple[int, int, int, int]]:
    """What each side's output holds: every key (its `count`), half of `last` and of `seen`."""
    live = lambda ids: sum(1 for i in ids if (i * 7919) % SPREAD_MS > SPREAD_MS // 2)  # noqa: E731
    return {PRUNE: (128, keys, live(range(keys)), 2 * live(range(0, keys, 4))),
            RESCALE: (256, keys, keys, 2 * len(range(0, keys, 4)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="counted runs of each (after a warm-up)")
    ap.add_argument("--keep", metavar="DIR", help="build the savepoint in DIR and keep it (reused when there)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-prune-") as workdir:
        work = Path(workdir)
        base = Path(args.keep) / f"savepoint-{args.keys}" if args.keep else work / "savepoint"
        if not (base / "_metadata").exists():
            build(base, args.keys)
        print(f"savepoint {base}: {args.keys:,} keys; load average before: {load_average()}")
        script = statectl_script()
        todo = {PRUNE: [script, "prune", str(base), str(work / PRUNE), "--expired-at", str(NOW),
                        "--ttl", f"{TTL_MS}ms", "--json"],
                RESCALE: [script, "rescale", str(base), str(work / RESCALE), "--max-parallelism", "256", "--json"]}
        want = expected(args.keys)
        for label, cmd in todo.items():  # warm-up; the answers are right
            seconds, cpu = run(cmd, work / label)
            got = answer(work / label)
            if got != want[label]:
                sys.exit(f"{label}: (max parallelism, keys, last values, seen entries) {got} != {want[label]}")
            print(f"  {label}: {seconds:.2f} s, {cpu:.1f} s CPU (warm-up), reads back {got}")
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in todo}
        for _ in range(args.repeat):
            for label, cmd in todo.items():
                runs[label].append(run(cmd, work / label))
    print(f"whole processes, median of {args.repeat} alternating runs; load average after: {load_average()}")
    medians = {}
    for label, pairs in runs.items():
        medians[label] = tuple(statistics.median(p[i] for p in pairs) for i in (0, 1))
        print(f"  {label:8s} {medians[label][0]:7.2f} s wall ({', '.join(f'{w:.2f}' for w, _ in pairs)}), "
              f"{medians[label][1]:6.1f} s CPU ({', '.join(f'{c:.1f}' for _, c in pairs)})")
    for i, what in enumerate(("wall", "CPU")):
        ratio = medians[PRUNE][i] / medians[RESCALE][i]
        print(f"{PRUNE} / {RESCALE}, {what}: {ratio:.2f} (target <= {TARGET}: {'met' if ratio <= TARGET else 'MISSED'})")


if __name__ == "__main__":
    main()
