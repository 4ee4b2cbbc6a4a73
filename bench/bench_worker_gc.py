"""What the Python workers' garbage collection costs statectl's Spark jobs of small savepoints:
statectl's tasks freezing what was alive when they start (`readers.worker`) against the same
processes with `gc.freeze` made a no-op (a ``sitecustomize`` on the workers' PYTHONPATH, so every
task is followed by a collection walking all the worker's modules, as before).

The savepoint is the suite's Flink 2.3 SQL job's (RocksDB canonical: 11 keyed operators, 24
tables; from its cache, or made once). Two commands, each timed as whole `statectl` processes
in turns (frozen, baseline, frozen, ...): `rescale` to max parallelism 128 (a Spark job of
several tasks per operator) and `sql` counting the rows of every table (one Data Source read
per table). Prints the median wall and CPU seconds (the process and its children: the JVM,
the Python workers) and the ratios. Then the same rescale in a warm session (a process
that keeps its Spark session and rescales again and again, as a notebook or a script does):
the seconds of one rescale after two for warming up. The load average is printed before and after.

    python bench/bench_worker_gc.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_diff import REPO, STATECTL, sql_job_savepoint, timed  # noqa: E402
from common import load_average  # noqa: E402

NO_FREEZE = "import gc\ngc.freeze = lambda: None\n"

WARM = """
import json, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from common import process_tree_cpu, session
from statectl import rescale
spark = session("bench-worker-gc", "local[2]", driver_memory=None)
work = tempfile.mkdtemp(prefix="warm-", dir=".")  # in the bench's folder, removed with it
for i in range(2):
    rescale(spark, sys.argv[2], f"{work}/warm{i}", max_parallelism=128)
runs = []
for i in range(int(sys.argv[3])):
    before, start = process_tree_cpu(), time.perf_counter()
    rescale(spark, sys.argv[2], f"{work}/run{i}", max_parallelism=128)
    wall, after = time.perf_counter() - start, process_tree_cpu()
    runs.append((wall, sum(after.values()) - sum(before.values())))
print(json.dumps(runs))
"""


def warm_rescales(base: str, work: Path, count: int, env: dict | None) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of *count* rescales in one warm session (a process of its own)."""
    done = subprocess.run([sys.executable, "-c", WARM, str(REPO / "bench"), base, str(count)],
                          capture_output=True, text=True, cwd=work, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"the warm session failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def every_table_counted(base: str) -> str:
    """One query counting the rows of each of the savepoint's keyed tables and timers."""
    views = subprocess.run([STATECTL, "sql", base, "SELECT DISTINCT view FROM catalogue WHERE scope = 'keyed'",
                            "-f", "csv"], capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    return " UNION ALL ".join(f"SELECT '{v}' AS view, count(*) AS n FROM `{v}`" for v in views)


def report(name: str, results: dict[str, list[tuple[float, float]]]) -> None:
    """The median (wall, CPU) of each side, and their ratios."""
    (fw, fc), (bw, bc) = ((statistics.median(w for w, _ in results[k]), statistics.median(c for _, c in results[k]))
                          for k in ("frozen", "baseline"))
    print(f"  {name}: frozen {fw:.2f} s wall / {fc:.2f} s CPU; baseline {bw:.2f} s / {bc:.2f} s; "
          f"ratio wall {fw / bw:.3f}, CPU {fc / bc:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    base = str(sql_job_savepoint())
    work = Path(tempfile.mkdtemp(prefix="bench-worker-gc-"))
    try:
        (work / "site").mkdir()
        (work / "site" / "sitecustomize.py").write_text(NO_FREEZE)
        baseline_env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(work / "site"),
                                                                    os.environ.get("PYTHONPATH")]))}
        query = every_table_counted(base)
        runs = 0

        def rescale(env):
            nonlocal runs
            runs += 1
            return timed(["rescale", base, str(work / f"out{runs}"), "--max-parallelism", "128"], env)

        cases = {"rescale": rescale, "sql (a count of every keyed table)":
                 lambda env: timed(["sql", base, query, "-f", "csv"], env)}
        print(f"statectl on the SQL job's savepoint ({base}), {repeat} turns each; "
              f"baseline: gc.freeze a no-op in the workers; load average before: {load_average()}")
        for name, run in cases.items():
            results = {"frozen": [], "baseline": []}
            for _ in range(repeat):
                results["frozen"].append(run(None))
                results["baseline"].append(run(baseline_env))
            report(name, results)
        results = {"frozen": [], "baseline": []}
        for _ in range(2):
            results["frozen"] += warm_rescales(base, work, repeat, None)
            results["baseline"] += warm_rescales(base, work, repeat, baseline_env)
        report(f"rescale in a warm session ({2 * repeat} each)", results)
        print(f"load average after: {load_average()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
