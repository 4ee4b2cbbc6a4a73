"""How fast `statectl info` answers on a savepoint with many operators.

Builds a savepoint with N operators (default 1,000), each with keyed state
and an operator list state, then times the `statectl` console script end to
end (process start included) against two baselines measured in the same run:
a bare `python -c pass`, and `statectl --version` (import cost alone).

    python bench/bench_info.py [--operators 1000] [--repeat 5]
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

import pyarrow as pa

from statectl.statefmt.build import write_keyed_files, write_operator_state_file
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import Field, KeyedSection, KeyedStateDescriptor, Operator, OperatorState, Savepoint
from statectl.statefmt.savepoint import commit, new_savepoint_id, now_iso


def build(path: Path, operators: int) -> None:
    out = Location.of(path)
    section = KeyedSection((Field("user", "string"),), (KeyedStateDescriptor("count", "value", "int64"),
                                                       KeyedStateDescriptor("seen", "list", "string")))
    table = pa.table({"user": ["a", "b"], "count": [1, 2], "seen": [["x"], ["y", "z"]]})
    ops = []
    for i in range(operators):
        uid = f"operator-{i}"
        op_id = operator_id_for_uid(uid)
        files = write_keyed_files(out, op_id, section, table, 128, 2)
        offsets = OperatorState("offsets", "list", "int64")
        f = write_operator_state_file(out, op_id, offsets,
                                      pa.table({"subtask": pa.array([0], pa.int32()), "value": [i]}))
        ops.append(Operator(op_id, uid, 2, 128,
                            KeyedSection(section.key, section.states, files),
                            (OperatorState("offsets", "list", "int64", (f,)),)))
    commit(Savepoint(new_savepoint_id(), now_iso(), tuple(ops)), out)


def timed(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {result.stderr.decode()}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-info-"))
    try:
        sp = workdir / "sp"
        start = time.perf_counter()
        build(sp, args.operators)
        print(f"built a savepoint with {args.operators} operators in {time.perf_counter() - start:.1f} s "
              f"(_metadata {(sp / '_metadata').stat().st_size / 1024:.0f} KiB)")
        python = timed([sys.executable, "-c", "pass"], args.repeat)
        version = timed(["statectl", "--version"], args.repeat)
        table = timed(["statectl", "info", str(sp)], args.repeat)
        as_json = timed(["statectl", "info", str(sp), "--json"], args.repeat)
        print(f"{'command':32} {'median s':>9} {'x python':>9}")
        for name, t in [("python -c pass (baseline)", python), ("statectl --version", version),
                        ("statectl info", table), ("statectl info --json", as_json)]:
            print(f"{name:32} {t:9.3f} {t / python:9.1f}")
        print(f"target: info under 1 s -> {'met' if max(table, as_json) < 1 else 'NOT met'}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
