"""`statectl read` of a large Flink savepoint to Parquet: the local engine against Spark, whole processes.

    python bench/bench_local_read.py [--keys 4000000] [--repeat 3]

The savepoint is `bench_vs_spa.py`'s (the suite's Flink 2.3 job in size mode, RocksDB backend,
canonical format, operator ``proc``: String keys, a ValueState<Long> and a ListState<String>;
made once, then cached). Both sides are the command a user types,
``statectl read SP --uid proc --format parquet --output OUT --overwrite``: by default (the local
engine, batches written as they decode) and with ``--engine spark`` (``STATECTL_ENGINE=classic``:
the command's own Spark, as before the warm engine). After one untimed warm-up
of each, the counted runs alternate (A B A B ...); each run's wall seconds and the peak memory
of its whole process tree (the sum of the RSS of the command and every descendant: the JVM and
Spark's Python workers, sampled every 50 ms) are printed, then the medians and the load average
before and after. Both outputs must hold the same number of rows. Never part of the suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_vs_spa import savepoint  # noqa: E402
from common import _descends, _processes, load_average, rss_mib  # noqa: E402


def tree_peak_mib(proc: subprocess.Popen, interval: float = 0.05) -> float:
    """The largest sum of RSS over *proc* and its descendants until it ends."""
    peak = 0.0
    while proc.poll() is None:
        parent = _processes()[0]
        total = 0.0
        for pid in parent:
            if pid == proc.pid or _descends(pid, proc.pid, parent):
                try:
                    total += rss_mib(pid)
                except OSError:
                    pass
        peak = max(peak, total)
        time.sleep(interval)
    return peak


def run(cmd: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    env = dict(os.environ, STATECTL_ENGINE="classic")  # Spark of the command's own: its whole cost
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    box: dict[str, float] = {}
    watcher = threading.Thread(target=lambda: box.update(peak=tree_peak_mib(proc)))
    watcher.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    watcher.join()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed (exit {proc.returncode}):\n{out}{err}")
    return seconds, box["peak"]


def rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.rglob("*.parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sp = savepoint(args.keys)
    size = sum(f.stat().st_size for f in sp.rglob("*") if f.is_file())
    script = Path(sys.executable).with_name("statectl")
    work = Path(tempfile.mkdtemp(prefix="bench-local-read-"))
    try:
        cases = {}
        for name, extra in (("local", []), ("spark", ["--engine", "spark"])):
            out = work / name
            cases[name] = (out, [str(script), "read", str(sp), "--uid", "proc", "--format", "parquet",
                                 "--output", str(out), "--overwrite", *extra])
        print(f"savepoint: {args.keys:,} keys, {size / 2**20:.0f} MiB ({sp})")
        for _, cmd in cases.values():
            run(cmd)  # warm-up, not counted
        counted = {out.name: rows(out) for out, _ in cases.values()}
        assert len(set(counted.values())) == 1, counted
        print(f"rows: {counted['local']:,} (both)")
        print(f"load average at start: {load_average()}")
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, (_, cmd) in cases.items():
                seconds, peak = run(cmd)
                figures[name].append((seconds, peak))
                print(f"  {name:6s} {seconds:6.2f} s  peak {peak:7.0f} MiB (process tree)")
        print(f"load average at end:   {load_average()}")
        med = {n: (statistics.median(s for s, _ in f), statistics.median(p for _, p in f))
               for n, f in figures.items()}
        for name, (seconds, peak) in med.items():
            print(f"median {name:6s} {seconds:6.2f} s  peak {peak:7.0f} MiB")
        print(f"local / spark: {med['local'][0] / med['spark'][0]:.2f}x time, "
              f"{med['local'][1] / med['spark'][1]:.2f}x peak memory")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
