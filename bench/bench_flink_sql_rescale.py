"""Rescaling a Flink SQL job's 1M-group GROUP BY savepoint against reading it and writing it as
statectl's own canonical format: whole processes, in the same run.

    python bench/bench_flink_sql_rescale.py [--keys 1000000] [--max-parallelism 256] [--repeat 3]

The savepoint is the suite's SQL size job's (``tests/flink_job.py``, mode ``sql-size``, Flink 2.3,
RocksDB, canonical; made once, then cached): ``SELECT k, COUNT(*), SUM(v), MAX(name) FROM src
GROUP BY k`` over *keys* keys, at max parallelism 128. Its ``GroupAggregate[n]`` has no uid; it is
found by its name (``operator_named``). Its keyed state ``accState`` holds one
``ROW<BIGINT, BIGINT, STRING>`` per ``ROW<INT>`` key. Both sides are whole processes:

- A, rescale: ``statectl rescale SP OUT --max-parallelism N`` (the Flink writer: every key row
  placed by Flink's hash at N key groups, the values written as ``RowDataSerializer`` writes them);
- B, own canonical: ``python bench/bench_flink_sql_rescale.py own SP OUT OPERATOR N``, the few
  lines a user writes with the library (the CLI's ``bootstrap`` cannot take a Flink SQL
  operator's table as input without a Flink base, which makes its output Flink's): the CLI's
  Spark session, ``open_savepoint(spark, SP).keyed(OPERATOR)`` written by
  ``SavepointWriter.new(N)`` as one keyed operator with its value state ``accState`` (Parquet
  per key-group range, the same N key groups and parallelism).

After one untimed run of each, whose outputs are read back in this process (no Spark) and must
hold the input's keys, count, sums and name lengths (``expected.json``'s totals) and the new max
parallelism, the counted runs alternate (A B A B ...), so a slow phase of the shared machine hits
both. Prints each side's median, the ratio A / B (target <= 1.5) and the load average before and
after. Never part of the suite.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

VERSION = "2.3.0"
TARGET = 1.5  # rescale seconds / own canonical seconds
OWN_UID = "group-agg"


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_own(savepoint: str, out: str, operator: str, max_parallelism: int) -> None:
    """B: the SQL operator's keyed table read and written as statectl's canonical savepoint."""
    from statectl.cli.spark import start_spark
    from statectl.readers import open_savepoint
    from statectl.writers import KeyedData, OperatorData, SavepointWriter, ValueState

    spark = start_spark()
    reader = open_savepoint(spark, savepoint)
    parallelism = reader.savepoint.operator_named(operator).parallelism
    table = reader.keyed(operator)
    keyed = KeyedData(key=["f0"], data=table, states=[ValueState("accState", column="accState")])
    writer = SavepointWriter.new(max_parallelism=max_parallelism)
    writer.with_operator(OperatorData(OWN_UID, parallelism, keyed=keyed))
    writer.write(out, spark)
    spark.stop()


def answer(out: Path, operator: str) -> tuple:
    """(max parallelism, keys, sum of keys, sum of COUNT(*), sum of SUM(v), characters of MAX(name))
    of *operator*'s keyed table in the savepoint at *out*, decoded in this process."""
    import pyarrow.compute as pc

    from statectl.readers.local import local_table
    from statectl.readers.resolve import choose_table, find_operator
    from statectl.statefmt.formats import load

    sp = load(str(out))
    op = find_operator(sp, operator) if operator == OWN_UID else sp.operator_named(operator)
    table = local_table(sp, choose_table(op))
    acc = table.column("accState").combine_chunks()
    return (op.max_parallelism, table.num_rows, pc.sum(table.column("f0")).as_py(),
            pc.sum(pc.struct_field(acc, "f0")).as_py(), pc.sum(pc.struct_field(acc, "f1")).as_py(),
            pc.sum(pc.utf8_length(pc.struct_field(acc, "f2"))).as_py())


def run(cmd: list[str], out: Path) -> float:
    """Seconds of one whole process writing *out* (removed first, untimed)."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        sys.exit(f"{' '.join(cmd[:3])} ... failed (exit {done.returncode}):\n{tail}")
    return seconds


def statectl_script() -> str:
    script = Path(sys.executable).with_name("statectl")  # not a version manager's shim
    return str(script) if script.exists() else "statectl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--max-parallelism", type=int, default=256, help="the new max parallelism (base: 128)")
    ap.add_argument("--repeat", type=int, default=3, help="counted runs of each (after a warm-up)")
    args = ap.parse_args()
    import flink_job

    snap = flink_job.make_sql_size_snapshots(VERSION, keys=args.keys)[0]
    size, name, n = snap.expected["size"], snap.expected["operator"]["name"], args.max_parallelism
    want = (n, args.keys, size["key_sum"], size["count_sum"], size["v_sum"], size["top_name_chars"])
    print(f"savepoint {snap.path}: {name}, {args.keys:,} keys; load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-sql-rescale-") as workdir:
        outs = {"rescale": Path(workdir) / "rescaled", "own canonical": Path(workdir) / "own"}
        cases = {
            "rescale": [statectl_script(), "rescale", str(snap.path), str(outs["rescale"]),
                        "--max-parallelism", str(n)],
            "own canonical": [sys.executable, __file__, "own", str(snap.path), str(outs["own canonical"]),
                              name, str(n)],
        }
        for label, cmd in cases.items():  # warm-up; the answers are right
            seconds = run(cmd, outs[label])
            got = answer(outs[label], name if label == "rescale" else OWN_UID)
            if got != want:
                sys.exit(f"{label}: (max parallelism, keys, key sum, count, sum, name chars) {got} != {want}")
            print(f"  {label}: {seconds:.2f} s (warm-up), reads back {got}")
        times: dict[str, list[float]] = {label: [] for label in cases}
        for _ in range(args.repeat):
            for label, cmd in cases.items():
                times[label].append(run(cmd, outs[label]))
    medians = {label: statistics.median(ts) for label, ts in times.items()}
    print(f"whole processes, median of {args.repeat} alternating runs, max parallelism 128 -> {n}; "
          f"load average after: {load_average()}")
    for label, m in medians.items():
        print(f"  {label:14s} {m:7.2f} s   ({', '.join(f'{t:.2f}' for t in times[label])})")
    ratio = medians["rescale"] / medians["own canonical"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"rescale / own canonical: {ratio:.2f} (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["own"] and len(sys.argv) == 6:
        write_own(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main()
