"""A native Flink write (RocksDB snapshots) against the canonical one, and Flink's restore of each.

N keys (a String key, a Long value state ``count``, a String list state ``events``) written by
``SavepointWriter`` as a Flink savepoint, once with canonical key-group streams and once with
native RocksDB snapshots (``layout="native"``), alternating on one Spark session; then the last
savepoint of each restored by a real Flink 2.3 job into the RocksDB backend
(``bench/restore/RestoreTimer.java``: the operator restored, one key read, the job ends), whole
processes, alternating. Prints each run, the medians, native's write throughput as a share of
canonical's (the target is at least 0.6) and the restore times (native's should be the shorter),
with the load average before and after.

    python bench/bench_flink_native_write.py [--keys 1000000] [--runs 3] [--parallelism 4]
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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from common import alternating_medians, load_average, session, user_events_operator  # noqa: E402

RESTORE_SOURCE = REPO / "bench" / "restore" / "RestoreTimer.java"


def restore_command(workdir: Path, parallelism: int):
    """Compile RestoreTimer against Flink 2.3; a function giving the command restoring a savepoint."""
    from support import flink_job

    lib = flink_job.lib_dir("2.3.0")
    classes = workdir / "classes"
    done = subprocess.run([flink_job._tool("javac"), "--release", "11", "-nowarn", "-cp", f"{lib}/*",
                           "-d", str(classes), str(RESTORE_SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"javac failed:\n{done.stdout}{done.stderr}")
    log4j = f"-Dlog4j.configurationFile={flink_job.JOB_DIR / 'log4j2.properties'}"
    return lambda sp: [flink_job._tool("java"), *flink_job.JVM_FLAGS, log4j, "-cp", f"{classes}:{lib}/*",
                       "RestoreTimer", str(sp), str(parallelism)]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or "restored" not in done.stdout:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        sys.exit(f"the restore failed (exit {done.returncode}):\n{tail}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=4)
    args = parser.parse_args()

    import warnings

    warnings.filterwarnings("ignore")
    from statectl.writers import SavepointWriter

    print(f"load average before: {load_average()}")
    spark = session("bench-flink-native-write", "local[*]")
    op = user_events_operator(spark, args.keys, args.parallelism)
    work = Path(tempfile.mkdtemp(prefix="bench-flink-native-"))
    last: dict[str, Path] = {}

    def write(layout: str):
        def run():
            out = work / f"{layout}-{time.monotonic_ns()}"
            SavepointWriter.new(format="flink", layout=layout).with_operator(op).write(str(out), spark)
            if layout in last:
                shutil.rmtree(last[layout])
            last[layout] = out
        return run

    try:
        _, medians = alternating_medians({"canonical": write("canonical"), "native": write("native")}, args.runs)
        print(f"write of {args.keys:,} keys, median of {args.runs} alternating runs (in-process, one session):")
        for name, m in medians.items():
            print(f"  {name:10s} {m:7.2f} s   {args.keys / m:12,.0f} keys/s")
        print(f"native throughput / canonical: {medians['canonical'] / medians['native']:.2f}x (target >= 0.6)")
        spark.stop()
        for name, path in last.items():
            size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
            print(f"  {name} savepoint: {size / 2**20:.1f} MiB")

        restore = restore_command(work, args.parallelism)
        times: dict[str, list[float]] = {name: [] for name in last}
        for name, path in last.items():  # warm-up: the JVM's files in the page cache
            timed(restore(path))
        for _ in range(args.runs):
            for name, path in last.items():
                times[name].append(timed(restore(path)))
        print(f"Flink 2.3 restore into RocksDB (whole process), median of {args.runs} alternating runs:")
        for name, ts in times.items():
            print(f"  {name:10s} {statistics.median(ts):7.2f} s   ({', '.join(f'{t:.2f}' for t in ts)})")
        ratio = statistics.median(times["canonical"]) / statistics.median(times["native"])
        print(f"canonical restore / native restore: {ratio:.2f}x (native should be faster: > 1)")
        print(f"load average after: {load_average()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
