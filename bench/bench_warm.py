"""The warm engine against the classic path: the same commands, whole processes, one run.

    python bench/bench_warm.py [--keys 1000000] [--repeat 3]

The savepoint is `bench_vs_spa.py`'s (the suite's Flink 2.3 job in size mode, RocksDB backend,
canonical format, operator ``proc``; made once, then cached). The commands, each as a user types it:

- ``sql``: ``statectl sql SP 'SELECT count(*), sum(count), sum(size(events)) FROM proc'``
  (the full read and aggregate of `bench_vs_spa.py`);
- ``where``: ``statectl read SP --uid proc --where "count > KEYS" -f jsonl`` (no row: a count is below the number of keys);
- ``rescale``: ``statectl rescale SP OUT --max-parallelism 256 --overwrite --json`` (goal: warm
  at most half the classic time);
- ``small``: ``statectl sql SMALL 'SELECT count(*) AS n FROM `lk-proc`'`` of a small Flink
  savepoint (the suite's fixture ``flink-dev/long-rocksdb-native``; goal: warm at most 1.5 s).

Each runs cold classic (``STATECTL_ENGINE=classic``: a Spark of the command's own, as before
the warm engine), warm (a server of its own folder, ``STATECTL_ENGINE_DIR`` a temporary one;
the command handed to its command server, a fork with the imports done) and warm in the
command's own process (``STATECTL_HANDOFF=off``: the command's imports paid, as before the
command server). First the warm engine's first command (the server starts: timed once), then
the counted runs take turns (classic, warm, own process, classic, ...); the load average is printed before
and after, and both paths' answers must agree. The server is stopped at the end. Never part of
the suite.
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
sys.path.insert(0, str(REPO / "bench"))

from bench_vs_spa import QUERY, savepoint  # noqa: E402
from common import load_average  # noqa: E402


def run(cmd: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} ... failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sp = str(savepoint(args.keys))
    script = str(Path(sys.executable).with_name("statectl"))
    folder = tempfile.mkdtemp(prefix="bench-warm-")
    classic = dict(os.environ, STATECTL_ENGINE="classic")
    warm = dict(os.environ, STATECTL_ENGINE_DIR=folder, STATECTL_ENGINE_IDLE="600")
    warm.pop("STATECTL_ENGINE", None)
    own = dict(warm, STATECTL_HANDOFF="off")
    small = REPO / "tests" / "fixtures" / "flink-dev" / "long-rocksdb-native" / "savepoint"
    commands = {"sql": [script, "sql", sp, QUERY, "--format", "jsonl"],
                "where": [script, "read", sp, "--uid", "proc", "--where", f"count > {args.keys}", "-f", "jsonl"],
                "rescale": [script, "rescale", sp, os.path.join(folder, "rescaled"), "--max-parallelism", "256",
                            "--overwrite", "--json"],
                "small": [script, "sql", str(small), "SELECT count(*) AS n FROM `lk-proc`", "-f", "jsonl"]}
    try:
        print(f"savepoint: {args.keys:,} keys ({sp})")
        print(f"load average at start: {load_average()}")
        first, answer = run(commands["sql"], warm)
        print(f"first warm command (starts the server): sql {first:.2f} s")
        times: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                for path, env in (("classic", classic), ("warm", warm), ("own", own)):
                    seconds, out = run(cmd, env)
                    if name == "sql":
                        assert out == answer, (out, answer)
                    times.setdefault(f"{name} {path}", []).append(seconds)
                    print(f"  {name:5s} {path:7s} {seconds:6.2f} s")
        print(f"load average at end:   {load_average()}")
        med = {k: statistics.median(v) for k, v in times.items()}
        for name in commands:
            c, w, o = med[f"{name} classic"], med[f"{name} warm"], med[f"{name} own"]
            print(f"median {name:5s}: classic {c:6.2f} s, warm {w:6.2f} s, warm / classic {w / c:.2f}; "
                  f"warm in its own process {o:6.2f} s ({o / c:.2f})")
    finally:
        subprocess.run([script, "engine", "stop"], env=warm, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
