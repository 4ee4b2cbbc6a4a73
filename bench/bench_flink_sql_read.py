"""Reading a Flink SQL job's GROUP BY state vs a DataStream job's keyed state: 1M keys each, in the same run.

    python bench/bench_flink_sql_read.py [--keys 1000000] [--repeat 3] [--native] [--no-profile]

Takes (from the suite's cache, or makes with the suite's Flink job, Flink 2.3, RocksDB
backend, canonical format, both in one JVM) two savepoints:

- SQL: the job's SQL size mode (``mode=sql-size``), ``SELECT k, COUNT(*), SUM(v), MAX(name)
  FROM src GROUP BY k`` over *keys* keys (one or two rows each). Its ``GroupAggregate[n]``
  operator has no uid; it is found by its name (``operator_named``, checked against the
  operator id the job computed). Keyed state ``accState``: one RowData accumulator
  ``ROW<f0 BIGINT (COUNT(*)), f1 BIGINT (SUM(v)), f2 STRING (MAX(name))>`` per key, the key a
  ``ROW<f0 INT>``.
- DataStream: the savepoint of ``bench_flink_read.py`` (size mode, operator ``proc``, String
  keys ``user-%07d``, ValueState<Long> ``count`` and ListState<String> ``events``).

First the in-process decode alone (no Spark): ``statectl.statefmt.flink.savepoint`` ``read_split``
of one split and ``keyed_table`` of the whole operator, rows/s, for both, with a cProfile of the
SQL split's decode (where the time goes). Then, in alternating runs, each savepoint is read with
``open_savepoint(spark, path).keyed(<operator>)`` and every column aggregated in Spark; the answers
are checked against each job's expected totals. Prints the medians, rows/s, the ratio SQL rows/s
/ DataStream rows/s (target >= 0.8) with the load average, and the CPU seconds of each read in the
JVM and in Spark's Python workers (independent of what else the shared machine runs).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_flink_read import aggregate as datastream_aggregate  # noqa: E402
from common import RssSampler, alternating_medians, load_average, rss_mib, session  # noqa: E402

VERSION = "2.3.0"
DS_UID = "proc"
TARGET = 0.8  # SQL rows/s / DataStream rows/s


class Case:
    """One savepoint to read: its path, the operator to read (name or uid) and the answer it must give."""

    def __init__(self, label: str, kind: str, path: Path, operator: str, want: tuple):
        self.label, self.kind, self.path, self.operator, self.want = label, kind, path, operator, want


def savepoints(keys: int, native: bool) -> list[Case]:
    """The SQL and DataStream savepoints (made once by the suite's job, in one JVM, then cached)."""
    from support import flink_job

    formats = ("canonical", "native") if native else ("canonical",)
    specs = [dict(mode="sql-size", keys=keys, backend="rocksdb", format=f) for f in formats]
    specs += [dict(mode="size", keys=keys, backend="rocksdb", format=f) for f in formats]
    t = time.perf_counter()
    snaps = flink_job.make_snapshots(VERSION, specs)
    print(f"Flink savepoints ready in {time.perf_counter() - t:.1f} s "
          f"(made once, then cached under {flink_job.snapshot_cache()})")
    cases = []
    for spec, snap in zip(specs, snaps):
        exp = snap.expected
        made = (snap.workdir / "done").read_text().strip()
        if spec["mode"] == "sql-size":
            size, op = exp["size"], exp["operator"]
            assert size["keys"] == keys and exp["received"]["matches_model"], exp["received"]
            want = (keys, size["key_sum"], size["count_sum"], size["v_sum"], size["top_name_chars"])
            cases.append(Case(f"sql {spec['format']}", "sql", snap.path, op["name"], want))
            print(f"  SQL {spec['format']}: {op['name']} (id {op['operator_id']}), {size['rows']:,} input rows, "
                  f"{_mib(snap.path):.0f} MiB, made in {made} ({exp.get('phases_ms')})")
        else:
            assert exp["size"]["keys"] == keys
            want = (keys, keys * len("user-0000000"), keys * (keys - 1) // 2, 2 * keys, keys * (keys - 1) // 2)
            cases.append(Case(f"datastream {spec['format']}", "ds", snap.path, DS_UID, want))
            print(f"  DataStream {spec['format']}: {DS_UID}, {_mib(snap.path):.0f} MiB, made in {made}")
    return cases


def _mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


# --- the in-process decode (no Spark) -------------------------------------------------------

def flink_operator(case: Case):
    from statectl.statefmt.flink.savepoint import open_flink_savepoint

    fsp = open_flink_savepoint(str(case.path))
    found = [op for op in fsp.operators if case.operator in (op.name, op.uid)]
    assert len(found) == 1, [op.name for op in fsp.operators]
    return found[0]


def arrow_answer(case: Case, table) -> tuple:
    """The Spark aggregate's answer, computed with pyarrow on a decoded table."""
    import pyarrow.compute as pc

    n = table.num_rows
    if case.kind == "sql":
        acc = table.column("accState").combine_chunks()
        return (n, pc.sum(table.column("f0")).as_py(), pc.sum(pc.struct_field(acc, "f0")).as_py(),
                pc.sum(pc.struct_field(acc, "f1")).as_py(),
                pc.sum(pc.utf8_length(pc.struct_field(acc, "f2"))).as_py())
    events = table.column("events").combine_chunks()
    second = pc.list_element(events, 1).cast("int64")
    return (n, pc.sum(pc.utf8_length(table.column("key"))).as_py(), pc.sum(table.column("count")).as_py(),
            pc.sum(pc.list_value_length(events)).as_py(), pc.sum(second).as_py())


def decode_bench(cases: list[Case], repeat: int, profile: bool) -> dict[str, float]:
    from statectl.statefmt.flink.savepoint import keyed_table, read_split

    ops = {c.label: flink_operator(c) for c in cases}
    for c in cases:  # warm-up (numba kernels compile on first use) and the answer
        got = arrow_answer(c, keyed_table(ops[c.label]))
        assert got == c.want, f"{c.label} in-process decode: {got} != {c.want}"
    print("in-process decode answers agree with the expected totals")

    def split_rows(op) -> int:
        return sum(b.num_rows for b in read_split(op.keyed_splits[0]))

    first_rows = {c.label: split_rows(ops[c.label]) for c in cases}
    fns = {}
    for c in cases:
        op = ops[c.label]
        fns[f"{c.label}: one split"] = lambda op=op: sum(b.num_rows for b in read_split(op.keyed_splits[0]))
        fns[f"{c.label}: whole operator"] = lambda op=op: keyed_table(op).num_rows
    load_before = load_average()
    times, medians = alternating_medians(fns, repeat)
    print(f"in-process decode (no Spark), median of {repeat}, "
          f"load average {load_before} before, {load_average()} after:")
    rates = {}
    for c in cases:
        op = ops[c.label]
        n_split, n_all = first_rows[c.label], c.want[0]
        for what, n in (("one split", n_split), ("whole operator", n_all)):
            name = f"{c.label}: {what}"
            rates[name] = n / medians[name]
            spread = ", ".join(f"{t:.2f}" for t in times[name])
            print(f"  {name:34s} {n:>9,} rows  {medians[name]:6.2f} s  {rates[name]:11,.0f} rows/s   ({spread})")
        print(f"    ({len(op.keyed_splits)} keyed splits; states "
              f"{', '.join(f'{s.name} {s.kind}' for s in op.states)})")
    sql = [c for c in cases if c.kind == "sql"]
    ds = [c for c in cases if c.kind == "ds"]
    for s, d in zip(sql, ds):
        ratio = rates[f"{s.label}: whole operator"] / rates[f"{d.label}: whole operator"]
        print(f"  in-process ratio {s.label} / {d.label} rows/s (whole operator): {ratio:.2f}")

    if profile:
        for c in cases:
            op = ops[c.label]
            prof = cProfile.Profile()
            prof.enable()
            n = sum(b.num_rows for b in read_split(op.keyed_splits[0]))
            prof.disable()
            for order, top in (("tottime", 14), ("cumulative", 16)):
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats(order).print_stats(top)
                lines = [line for line in out.getvalue().splitlines() if line.strip()]
                total = next(line.strip() for line in lines if "function calls" in line)
                table = lines[next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")):]
                print(f"cProfile of {c.label}, one split ({n:,} rows; {total}), by {order}:")
                print("\n".join(table))
    return rates


# --- through Spark ---------------------------------------------------------------------------

def aggregate(case: Case, df) -> tuple:
    """Every column decoded: one row of totals."""
    from pyspark.sql import functions as F

    if case.kind == "sql":
        row = df.agg(
            F.count("*").alias("rows"),
            F.sum("f0").alias("key_sum"),
            F.sum("accState.f0").alias("count_sum"),
            F.sum("accState.f1").alias("v_sum"),
            F.sum(F.length("accState.f2")).alias("top_name_chars"),
        ).collect()[0]
        return tuple(row)
    return datastream_aggregate(df)  # the DataStream baseline, aggregated as bench_flink_read does


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--native", action="store_true", help="also the RocksDB native savepoints of both jobs")
    ap.add_argument("--no-profile", dest="profile", action="store_false",
                    help="skip the cProfile of one split's decode")
    ap.add_argument("--no-decode", dest="decode", action="store_false", help="skip the in-process decode timing")
    args = ap.parse_args()

    cases = savepoints(args.keys, args.native)
    if args.decode:
        decode_bench(cases, args.repeat, args.profile)

    from statectl.readers import open_savepoint

    spark = session("bench-flink-sql-read", arrow=False)

    def run(case: Case) -> tuple:
        return aggregate(case, open_savepoint(spark, str(case.path)).keyed(case.operator))

    for c in cases:  # the SQL operator by name: the one operator the job named so, with the id it computed
        if c.kind == "sql":
            op = open_savepoint(spark, str(c.path)).savepoint.operator_named(c.operator)
            assert op.uid is None and op.name == c.operator
            print(f"{c.label}: operator {c.operator!r} is {op.operator_id} (no uid)")
    for c in cases:  # warm-up; the answers are right
        got = run(c)
        assert got == c.want, f"{c.label}: {got} != {c.want}"
    print("Spark answers agree with the expected totals:")
    for c in cases:
        print(f"  {c.label:22s} {c.want}")

    before = rss_mib()
    cpu: dict[str, list[dict[str, float]]] = {}
    load_before = load_average()
    with RssSampler() as rss:
        times, medians = alternating_medians({c.label: (lambda c=c: run(c)) for c in cases}, args.repeat, cpu)

    n = args.keys
    print(f"{n:,} keys each, read + aggregate every column, median of {args.repeat} (local[2]), "
          f"load average {load_before} before, {load_average()} after:")
    for c in cases:
        m = medians[c.label]
        spread = ", ".join(f"{t:.2f}" for t in times[c.label])
        print(f"  {c.label:22s} {m:6.2f} s  {n / m:11,.0f} rows/s   ({spread})")
    fmts = [c.label.split()[1] for c in cases if c.kind == "sql"]
    for fmt in fmts:
        ratio = medians[f"datastream {fmt}"] / medians[f"sql {fmt}"]  # same row count: rows/s ratio
        verdict = "met" if ratio >= TARGET else "MISSED"
        print(f"throughput ratio sql {fmt} / datastream {fmt} (rows/s): {ratio:.2f} (target >= {TARGET}: {verdict})")
    print("CPU seconds per run (median; JVM, Python workers, driver), independent of the load:")
    medians_cpu = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for name, runs in cpu.items()}
    for name, c in medians_cpu.items():
        print(f"  {name:22s} {c['jvm'] + c['workers']:6.2f} s  (JVM {c['jvm']:.2f}, workers {c['workers']:.2f}, "
              f"driver {c['driver']:.2f})")
    for fmt in fmts:
        s, d = medians_cpu[f"sql {fmt}"], medians_cpu[f"datastream {fmt}"]
        print(f"CPU ratio sql {fmt} / datastream {fmt} (datastream CPU / sql CPU): "
              f"{(d['jvm'] + d['workers']) / (s['jvm'] + s['workers']):.2f}")
    print(f"driver RSS: {before:.0f} MiB before the timed runs, peak {rss.peak:.0f} MiB, "
          f"after {rss.end:.0f} MiB")
    spark.stop()


if __name__ == "__main__":
    main()
