"""Rescaling a Flink SQL job's 1M-group GROUP BY savepoint against reading it and writing it as
statectl's own canonical format: whole processes, in the same run.

    python bench/bench_flink_sql_rescale.py [--keys 1000000] [--max-parallelism 256] [--repeat 3]
                                            [--against PYTHONPATH]

The savepoint is the suite's SQL size job's (``tests/support/flink_job.py``, mode ``sql-size``, Flink 2.3,
RocksDB, canonical; made once, then cached): ``SELECT k, COUNT(*), SUM(v), MAX(name) FROM src
GROUP BY k`` over *keys* keys, at max parallelism 128. Its ``GroupAggregate[n]`` has no uid; it is
found by its name (``operator_named``). Its keyed state ``accState`` holds one
``ROW<BIGINT, BIGINT, STRING>`` per ``ROW<INT>`` key. Both sides are whole processes:

- A, rescale: ``statectl rescale SP OUT --max-parallelism N`` (the Flink writer: every key row
  placed by Flink's hash at N key groups, the values written as ``RowDataSerializer`` writes them);
- B, own canonical: ``python bench/bench_flink_sql_rescale.py own SP OUT OPERATOR N``, the few
  lines a user writes with the library (the CLI's ``bootstrap`` cannot take a Flink SQL
  operator's table as input without a Flink base, which makes its output Flink's): the CLI's
  Spark session, ``open_savepoint(spark, SP)``'s ``keyed(OPERATOR)`` and ``timers(OPERATOR)``
  written by ``SavepointWriter.new(N)`` as one keyed operator with its value state ``accState``
  and its timers of both domains (Parquet per key-group range, the same N key groups and
  parallelism): the same state the rescale moves (the job registered no timers; both read the
  operator's timer states all the same).

With ``--against``, A is also run with that PYTHONPATH (another checkout linked as
``<dir>/statectl``; ``''`` for the installed one), in the same turns: before and after a change
under the same load.

After one untimed run of each, whose outputs are read back in this process (no Spark) and must
hold the input's keys, count, sums and name lengths (``expected.json``'s totals) and the new max
parallelism, the counted runs alternate (A B A B ...), so a slow phase of the shared machine hits
both. Prints each side's median wall seconds and CPU seconds of its whole process tree (the JVM
and Spark's Python workers included: less dependent on what else the shared machine runs), the
ratios A / B (target <= 1.5) and the load average before and after. Never part of the suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from common import TreeCpuSampler, load_average  # noqa: E402

VERSION = "2.3.0"
TARGET = 1.5  # rescale seconds / own canonical seconds
OWN_UID = "group-agg"
RESCALE, OWN = "rescale", "own canonical"


def write_own(savepoint: str, out: str, operator: str, max_parallelism: int) -> None:
    """B: the SQL operator's keyed table and timers read and written as statectl's canonical savepoint."""
    from statectl.cli.spark import start_spark
    from statectl.readers import open_savepoint
    from statectl.statefmt.vocabulary import TimerDomain
    from statectl.writers import KeyedData, OperatorData, SavepointWriter, Timers, ValueState

    spark = start_spark()
    reader = open_savepoint(spark, savepoint)
    parallelism = reader.savepoint.operator_named(operator).parallelism
    timers = reader.timers(operator)
    keyed = KeyedData(key=["f0"], data=reader.keyed(operator), states=[ValueState("accState", column="accState")],
                      timers=[Timers(d, "timestamp", timers.where(timers.domain == d)) for d in TimerDomain.words()])
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


def run(cmd: list[str], out: Path, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of its process tree) of one whole process writing *out*
    (removed first, untimed), in *env* (default: this process's)."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    sampler = TreeCpuSampler(proc.pid)
    output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    cpu = sampler.stop()
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-20:])
        sys.exit(f"{' '.join(cmd[:3])} ... failed (exit {proc.returncode}):\n{tail}")
    return seconds, cpu


def statectl_script() -> str:
    script = Path(sys.executable).with_name("statectl")  # not a version manager's shim
    return str(script) if script.exists() else "statectl"


def cases(savepoint: Path, operator: str, max_parallelism: int, against: str | None,
          workdir: Path) -> dict[str, tuple[list[str], Path, dict | None]]:
    """Each case's (command, output, environment): A (and A against another tree), then B."""
    def rescale(out: Path) -> list[str]:
        return [statectl_script(), "rescale", str(savepoint), str(out), "--max-parallelism", str(max_parallelism)]
    found = {RESCALE: (rescale(workdir / "rescaled"), workdir / "rescaled", None)}
    if against is not None:
        found[f"{RESCALE} [against]"] = (rescale(workdir / "against"), workdir / "against",
                                         {**os.environ, "PYTHONPATH": against})
    own = [sys.executable, __file__, "own", str(savepoint), str(workdir / "own"), operator, str(max_parallelism)]
    return {**found, OWN: (own, workdir / "own", None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--max-parallelism", type=int, default=256, help="the new max parallelism (base: 128)")
    ap.add_argument("--repeat", type=int, default=3, help="counted runs of each (after a warm-up)")
    ap.add_argument("--against", metavar="PYTHONPATH", help="also time the rescale with this PYTHONPATH "
                    "(another checkout linked as <dir>/statectl; '' for the installed one), in the same turns")
    args = ap.parse_args()
    from support import flink_job

    snap = flink_job.make_sql_size_snapshots(VERSION, keys=args.keys)[0]
    size, name, n = snap.expected["size"], snap.expected["operator"]["name"], args.max_parallelism
    want = (n, args.keys, size["key_sum"], size["count_sum"], size["v_sum"], size["top_name_chars"])
    print(f"savepoint {snap.path}: {name}, {args.keys:,} keys; load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-sql-rescale-") as workdir:
        todo = cases(snap.path, name, n, args.against, Path(workdir))
        for label, (cmd, out, env) in todo.items():  # warm-up; the answers are right
            seconds, cpu = run(cmd, out, env)
            got = answer(out, OWN_UID if label == OWN else name)
            if got != want:
                sys.exit(f"{label}: (max parallelism, keys, key sum, count, sum, name chars) {got} != {want}")
            print(f"  {label}: {seconds:.2f} s, {cpu:.1f} s CPU (warm-up), reads back {got}")
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in todo}
        for _ in range(args.repeat):
            for label, (cmd, out, env) in todo.items():
                runs[label].append(run(cmd, out, env))
    print(f"whole processes, median of {args.repeat} alternating runs, max parallelism 128 -> {n}; "
          f"load average after: {load_average()}")
    medians = {}
    for label, pairs in runs.items():
        medians[label] = tuple(statistics.median(p[i] for p in pairs) for i in (0, 1))
        print(f"  {label:18s} {medians[label][0]:7.2f} s wall ({', '.join(f'{w:.2f}' for w, _ in pairs)}), "
              f"{medians[label][1]:6.1f} s CPU ({', '.join(f'{c:.1f}' for _, c in pairs)})")
    for label in (label for label in medians if label != OWN):
        for i, what in enumerate(("wall", "CPU")):
            ratio = medians[label][i] / medians[OWN][i]
            verdict = "met" if ratio <= TARGET else "MISSED"
            print(f"{label} / {OWN}, {what}: {ratio:.2f} (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["own"] and len(sys.argv) == 6:
        write_own(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main()
