"""statectl against Flink's State Processor API: the same 1M-key savepoint read and aggregated.

    python bench/bench_vs_spa.py [--spa-jar flink-state-processor-api-2.3.0.jar] [--keys 1000000]
                                 [--repeat 3]

The savepoint is `bench_flink_read.py`'s (the suite's Flink 2.3 job in size mode, RocksDB,
canonical: String keys, a ValueState<Long> ``count`` and a ListState<String> ``events`` in
operator ``proc``; made once, then cached). Both sides are whole processes, started the same
way a user starts them, and give the same three numbers (keys, the sum of ``count``, the
number of list elements), which must agree:

- statectl: ``statectl sql SP 'SELECT count(*), sum(count), sum(size(events)) FROM proc'``;
- with ``--spa-jar``: ``bench/spa/SpaAggregate.java`` (compiled here with javac against the
  Flink 2.3 jars in ~/.cache/statectl/flink/2.3.0/lib and the jar), a State Processor API job
  on a local MiniCluster (``java -cp ... SpaAggregate``).

After one untimed warm-up of each, the counted runs alternate (A B A B ...), so a slow phase
of a shared machine hits both; the load average is printed before and after. Without
``--spa-jar`` it times statectl alone and says so. The State Processor API is not in the
PyPI ``apache-flink`` wheels: download it (Maven Central,
``org.apache.flink:flink-state-processor-api:2.3.0``) and pass its path. Never part of the suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from common import load_average  # noqa: E402
from support import flink_job  # noqa: E402

UID = "proc"
QUERY = f"SELECT count(*) AS keys, sum(count) AS total, sum(size(events)) AS elements FROM {UID}"
SPA_SOURCE = REPO / "bench" / "spa" / "SpaAggregate.java"


def savepoint(keys: int) -> Path:
    (snap,) = flink_job.make_snapshots("2.3.0", [dict(mode="size", keys=keys, backend="rocksdb",
                                                      format="canonical")])
    return Path(snap.path)


def statectl_command(sp: Path) -> list[str]:
    script = Path(sys.executable).with_name("statectl")  # not a version manager's shim
    return [str(script) if script.exists() else "statectl", "sql", str(sp), QUERY, "--format", "jsonl"]


def statectl_answer(stdout: str) -> tuple[int, int, int]:
    row = json.loads(stdout.strip().splitlines()[-1])
    return row["keys"], row["total"], row["elements"]


def spa_command(sp: Path, jar: Path, workdir: Path) -> list[str]:
    """Compile SpaAggregate against Flink 2.3 and *jar*; the command that runs it."""
    lib = flink_job.lib_dir("2.3.0")
    classpath = f"{lib}/*:{jar}"
    classes = workdir / "classes"
    done = subprocess.run([flink_job._tool("javac"), "--release", "11", "-nowarn", "-cp", classpath,
                           "-d", str(classes), str(SPA_SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"javac failed:\n{done.stdout}{done.stderr}")
    log4j = f"-Dlog4j.configurationFile={flink_job.JOB_DIR / 'log4j2.properties'}"
    return [flink_job._tool("java"), *flink_job.JVM_FLAGS, log4j, "-cp", f"{classes}:{classpath}",
            "SpaAggregate", str(sp), UID]


def spa_answer(stdout: str) -> tuple[int, int, int]:
    keys, total, elements = stdout.strip().splitlines()[-1].split()
    return int(keys), int(total), int(elements)


def run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        sys.exit(f"{' '.join(cmd[:3])} ... failed (exit {done.returncode}):\n{tail}")
    return seconds, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spa-jar", type=Path, help="flink-state-processor-api-2.3.0.jar")
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="counted runs of each (after a warm-up)")
    args = ap.parse_args()
    sp = savepoint(args.keys)
    cases = {"statectl sql": (statectl_command(sp), statectl_answer)}
    with tempfile.TemporaryDirectory(prefix="bench-spa-") as workdir:
        if args.spa_jar is not None:
            cases["State Processor API"] = (spa_command(sp, args.spa_jar.resolve(), Path(workdir)), spa_answer)
        else:
            print("no --spa-jar: timing statectl alone (the State Processor API is not compared)")
        print(f"savepoint {sp} ({args.keys:,} keys); load average before: {load_average()}")
        answers = {name: parse(run(cmd)[1]) for name, (cmd, parse) in cases.items()}  # warm-up
        for name, answer in answers.items():
            print(f"  {name}: keys, sum(count), list elements = {answer}")
        if len(set(answers.values())) != 1:
            sys.exit("the answers differ")
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, (cmd, _parse) in cases.items():
                times[name].append(run(cmd)[0])
    print(f"whole processes, median of {args.repeat} alternating runs; load average after: {load_average()}")
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, m in medians.items():
        print(f"  {name:22s} {m:7.2f} s   ({', '.join(f'{t:.2f}' for t in times[name])})")
    if "State Processor API" in medians:
        ratio = medians["State Processor API"] / medians["statectl sql"]
        print(f"statectl throughput / State Processor API: {ratio:.2f}x (target >= 2)")


if __name__ == "__main__":
    main()
