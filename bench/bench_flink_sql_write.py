"""Writing a Flink SQL job's GROUP BY state again, as the Flink writer's tasks do, against reading it.

    python bench/bench_flink_sql_write.py [--keys 1000000] [--repeat 3]

Takes (from the suite's cache, or makes with the suite's Flink job, Flink 2.3, RocksDB backend,
canonical format) the SQL size job's savepoint: ``SELECT k, COUNT(*), SUM(v), MAX(name) FROM src
GROUP BY k`` over *keys* keys, one ``GroupAggregate`` whose keyed state ``accState`` holds one
``ROW<BIGINT, BIGINT, STRING>`` per ``ROW<INT>`` key (plus its timers, if any). Per subtask's
stream, in process and without Spark (`tests/support/flink_sql_entries.py`):

- read: the stream decoded into its keyed and timers tables (``read_split``);
- encode: the tables through the writer's ``EntryEncoder`` (key rows and their key groups,
  values as ``RowDataSerializer`` writes them);
- assemble: the entries sorted by key group and key (the write's shuffle does it in Spark) and
  the keyed stream built under the base's header, checked equal to Flink's bytes.

Prints the best of *repeat* CPU seconds of each phase (independent of what else the shared
machine runs), rows/s, and (encode + assemble) / read with the load average before and after.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from common import load_average  # noqa: E402


def best(f, repeat: int):
    """(the least CPU seconds of *repeat* calls of *f*, its result)."""
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        out = f()
        runs.append(time.process_time() - t)
    return min(runs), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from support import flink_job
    from support.flink_sql_entries import SplitRewrite
    from statectl.statefmt.flink.rowdata import RowData
    from statectl.statefmt.flink.savepoint import open_flink_savepoint

    snap = flink_job.make_sql_size_snapshots("2.3.0", keys=args.keys)[0]
    fsp = open_flink_savepoint(snap.path)
    op = next(o for o in fsp.operators if o.keyed_header is not None and isinstance(o.key_type, RowData))
    totals = {"read": 0.0, "encode": 0.0, "assemble": 0.0}
    rows = 0
    load_before = load_average()
    for split in op.keyed_splits:
        rewrite = SplitRewrite(op, split)
        seconds, tables = best(rewrite.tables, args.repeat)
        totals["read"] += seconds
        seconds, entries = best(lambda: rewrite.entries(*tables), args.repeat)
        totals["encode"] += seconds
        seconds, (written, _) = best(lambda: rewrite.stream(entries), args.repeat)
        totals["assemble"] += seconds
        assert written == rewrite.stored(), f"subtask {split.subtask}: not Flink's bytes"
        rows += tables[0].num_rows
    print(f"{op.name} of {snap.path}: {rows} keys, {len(op.keyed_splits)} streams, written again byte for byte")
    for phase, seconds in totals.items():
        print(f"  {phase:9s} {seconds:6.2f} s CPU  {rows / seconds / 1e6:5.2f} M rows/s")
    ratio = (totals["encode"] + totals["assemble"]) / totals["read"]
    print(f"  (encode + assemble) / read = {ratio:.2f}   load average {load_before} before, {load_average()} after")


if __name__ == "__main__":
    main()
