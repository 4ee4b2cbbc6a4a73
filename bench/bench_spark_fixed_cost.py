"""Where the seconds go between process start and the first row of a Spark read.

    python bench/bench_spark_fixed_cost.py [--keys 1000000] [--savepoint PATH --uid UID]

Runs, in a fresh process each (as `statectl read --engine spark` and `statectl sql` do), the
steps of a Spark read of the 1M-key Flink 2.3 savepoint of `bench_flink_read.py` (made once
by the suite's Flink job, then cached), timing each step:

- python start: the interpreter and site (process start to the script's first line);
- load: importing statectl and reading `_metadata`;
- import pyspark;
- session: `cli.spark.start_spark` (the JVM and the session's configuration);
- register: the Data Source's registration;
- plan: the DataFrame (the Data Source's schema and partitions, the files' checks);
- first row: `take(1)` (Python workers start, the kernels load, one split decoded);
- first row again: the same in the warm session (what each further query pays);
- sql plan / sql first row: `SavepointReader.sql` of a count over the keyed view.

The steps run twice, one process each: with the driver JVM's options (`cli/jvm.py`: C1
only, the class-data-sharing archive) and with a plain JVM. Then the same as whole
processes of the console script (`statectl read --engine spark --limit 1`, `statectl sql
... count(*)`), and a Python worker's own start (a fresh interpreter importing the decoder
and loading numba's cached kernels). Prints seconds per step and the load average; nothing
is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UID = "proc"


def process_age() -> float:
    """Seconds since this process started (the kernel's start time, 10 ms ticks)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def child(savepoint: str, uid: str, plain_jvm: bool) -> None:
    """The steps of one Spark read, timed in this (fresh) process; prints one JSON object."""
    steps = {"python start": process_age()}
    if plain_jvm:
        import statectl.cli.jvm

        statectl.cli.jvm.driver_java_options = lambda read_bytes, user_properties=None: ""
    mark = time.perf_counter()

    def step(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        steps[name] = now - mark
        mark = now

    from statectl.cli.app import app  # noqa: F401  (the console script's imports)
    from statectl.readers import SavepointReader
    from statectl.readers.resolve import choose_table
    from statectl.statefmt.formats import load
    from statectl.statefmt.ids import OperatorRef

    sp = load(savepoint)
    choice = choose_table(sp.operator(OperatorRef(uid=uid)), None, False)
    step("load")
    import pyspark.sql  # noqa: F401
    step("import pyspark")
    from statectl.cli.spark import start_spark
    from statectl.readers.local import table_files

    spark = start_spark(None, read_bytes=sum(f.size for f in table_files(sp, choice)))  # as `read` does
    step("session")
    from statectl.readers.datasource import SplitSource, _registered

    spark.dataSource.register(SplitSource)
    _registered.add(id(spark))
    step("register")
    reader = SavepointReader(spark, sp)
    df = reader.table(choice)
    step("plan")
    df.take(1)
    step("first row")
    reader.table(choice).take(1)
    step("first row again")
    result = reader.sql(f"SELECT count(*) FROM `{uid}`")
    step("sql plan")
    result.take(1)
    step("sql first row (all rows counted)")
    print(json.dumps(steps))


def steps_of(kind: str, savepoint: str, uid: str) -> dict[str, float]:
    """The steps' seconds in a fresh child process (*kind*: "options" or "plain" JVM), and
    the whole process's."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--savepoint", savepoint, "--uid", uid],
                         capture_output=True, text=True)
    total = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(out.stderr.strip())
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "whole process": total}


def statectl_script() -> str:
    """The console script beside this interpreter (not a version manager's shim)."""
    script = Path(sys.executable).with_name("statectl")
    return str(script) if script.exists() else "statectl"


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {result.stderr.strip()}")
    return time.perf_counter() - start


def worker_start() -> float:
    """A fresh interpreter importing the Flink decoder with numba's cached kernels, as a
    Python worker does on its first task."""
    return wall([sys.executable, "-c", "import statectl.statefmt.flink.savepoint, "
                 "statectl.readers.datasource"])


def default_savepoint(keys: int) -> str:
    sys.path.insert(0, str(REPO / "tests"))
    from support import flink_job

    (snap,) = flink_job.make_snapshots("2.3.0", [dict(mode="size", keys=keys, backend="rocksdb",
                                                      format="canonical")])
    return str(snap.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--savepoint", help="another savepoint (default: the 1M-key Flink 2.3 one)")
    ap.add_argument("--uid", default=UID, help="the operator read (default: proc)")
    ap.add_argument("--child", choices=("options", "plain"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.savepoint, args.uid, args.child == "plain")
        return
    sys.path.insert(0, str(REPO / "bench"))  # here, not at the top: a child's imports are timed
    from common import load_average

    savepoint = args.savepoint or default_savepoint(args.keys)
    print(f"savepoint {savepoint}, operator {args.uid}; load average {load_average()}")
    runs = {kind: steps_of(kind, savepoint, args.uid) for kind in ("options", "plain")}
    print(f"{'step (one process, in order)':40} {'JVM options':>12} {'plain JVM':>10}")
    for name in runs["options"]:
        print(f"{name:40} {runs['options'][name]:12.2f} {runs['plain'][name]:10.2f}")
    script = statectl_script()
    print(f"{'a Python worker start (decoder + kernels)':40} {worker_start():7.2f}")
    print(f"{'statectl read --engine spark --limit 1':40} "
          f"{wall([script, 'read', savepoint, '--uid', args.uid, '--engine', 'spark', '--limit', '1']):7.2f}")
    print(f"{'statectl sql count(*)':40} "
          f"{wall([script, 'sql', savepoint, f'SELECT count(*) FROM `{args.uid}`']):7.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
