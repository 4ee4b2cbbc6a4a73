"""How fast `statectl info` answers on a savepoint with many operators, own format and Flink's.

Builds two savepoints with N operators (default 1,000): one in statectl's format, each
operator with keyed state and an operator list state, and one in Flink's, whose operators
are copies (new uids, names and ids) of the keyed and the operator-state operators of a
real Flink 2.3 savepoint of the suite's job (from its cache, or made once). Then times the
`statectl` console script beside this interpreter (not a version manager's shim, which adds
its own start) end to end, process start included, in turns, against baselines measured in
the same run: `python -S -c pass` (the interpreter alone), `python -c pass` (with site's
start-up, which every console script pays) and `statectl --version`.

    python bench/bench_info.py [--operators 1000] [--repeat 5] [--against PYTHONPATH] [--pycache-prefix DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from common import load_average  # noqa: E402
from statectl.statefmt.build import write_keyed_files, write_operator_state_file  # noqa: E402
from statectl.statefmt.fs import Location  # noqa: E402
from statectl.statefmt.ids import operator_id_for_uid  # noqa: E402
from statectl.statefmt.model import Field, KeyedSection, KeyedStateDescriptor, Operator, OperatorState, Savepoint  # noqa: E402
from statectl.statefmt.formats import commit  # noqa: E402
from statectl.statefmt.savepoint import new_savepoint_id, now_iso  # noqa: E402


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


def build_flink(path: Path, operators: int) -> None:
    """A Flink 2.3 savepoint of *operators* operators: copies of a real savepoint's operators
    holding keyed state or operator state, each with its own uid, name and id, over copies of
    the real savepoint's stream files."""
    sys.path.insert(0, str(REPO / "tests"))
    from support import flink_job

    from statectl.statefmt.flink.metadata import parse_metadata
    from statectl.statefmt.flink.metadata_write import encode_metadata

    (snap,) = flink_job.make_snapshots("2.3.0", [dict(backend="hashmap")])
    real = Path(snap.path)
    meta = parse_metadata((real / "_metadata").read_bytes())
    stateful = [op for op in meta.operators
                if any(s.managed_keyed is not None or s.managed_operator for s in op.subtasks)]
    copies = []
    for i in range(operators):
        uid = f"operator-{i}"
        copies.append(dataclasses.replace(stateful[i % len(stateful)], uid=uid, name=f"Operator {i}",
                                          operator_id=operator_id_for_uid(uid)))
    shutil.copytree(real, path, ignore=shutil.ignore_patterns("_metadata"))
    (path / "_metadata").write_bytes(encode_metadata(dataclasses.replace(meta, operators=tuple(copies))))


def statectl_script() -> str:
    """The console script beside this interpreter (a pyenv shim on PATH adds its own start)."""
    script = Path(sys.executable).with_name("statectl")
    return str(script) if script.exists() else "statectl"


def timed(commands: dict[str, tuple[list[str], dict | None]], repeat: int) -> dict[str, tuple[float, float]]:
    """The median wall time and CPU time (user + system) of each command, run in turns (A B C,
    A B C, ...) after one warm-up round, so that a change of the machine's load falls on every
    command alike; the CPU time moves less with the load than the wall time does."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (cmd, env) in commands.items():
            before = _children_cpu()
            start = time.perf_counter()
            result = subprocess.run(cmd, capture_output=True, env=env)
            if round_:
                times[name].append((time.perf_counter() - start, _children_cpu() - before))
            if result.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed: {result.stderr.decode()}")
    return {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for name, t in times.items()}


def bytecode_env(prefix: str | None) -> dict[str, str]:
    """The commands' environment: with *prefix*, compiled modules are cached there (as an
    installed package's are), else as this environment says; printed, since a run without a
    bytecode cache compiles every statectl module it imports (about 0.07 s of `info`)."""
    env = dict(os.environ)
    if prefix:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = prefix
        print(f"bytecode cached under {prefix} (filled by the warm-up round)")
    elif env.get("PYTHONDONTWRITEBYTECODE"):
        print("bytecode not cached (PYTHONDONTWRITEBYTECODE is set): every run compiles the modules it "
              "imports from source; --pycache-prefix DIR times them as installed")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="PYTHONPATH", help="also time the commands with this PYTHONPATH "
                        "(another checkout linked as <dir>/statectl; '' for the installed one), in the same turns")
    parser.add_argument("--pycache-prefix", metavar="DIR", help="cache compiled modules in DIR "
                        "(PYTHONPYCACHEPREFIX), as an installed package has them")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-info-"))
    try:
        own, flink = workdir / "own", workdir / "flink"
        for name, path, make in (("statectl", own, build), ("Flink", flink, build_flink)):
            start = time.perf_counter()
            make(path, args.operators)
            print(f"built a {name} savepoint with {args.operators} operators in "
                  f"{time.perf_counter() - start:.1f} s (_metadata {(path / '_metadata').stat().st_size / 1024:.0f} KiB)")
        script = statectl_script()
        print(f"{script}; load average before: {load_average()}")
        env = bytecode_env(args.pycache_prefix)
        commands = {"python -S -c pass (floor)": ([sys.executable, "-S", "-c", "pass"], env),
                    "python -c pass (baseline)": ([sys.executable, "-c", "pass"], env)}
        trees = {"": env}
        if args.against is not None:
            trees[" [against]"] = {**env, "PYTHONPATH": args.against}
        for suffix, env in trees.items():
            commands[f"statectl --version{suffix}"] = ([script, "--version"], env)
            for name, path in (("own", own), ("flink", flink)):
                commands[f"statectl info ({name}){suffix}"] = ([script, "info", str(path)], env)
                commands[f"statectl info --json ({name}){suffix}"] = ([script, "info", str(path), "--json"], env)
        times = timed(commands, args.repeat)
        print(f"load average after: {load_average()}")
        python = times["python -c pass (baseline)"][0]
        print(f"{'command':44} {'median s':>9} {'x python':>9} {'CPU s':>7}")
        for name, (wall, cpu) in times.items():
            print(f"{name:44} {wall:9.3f} {wall / python:9.1f} {cpu:7.3f}")
        worst = max(w for name, (w, _) in times.items() if name.startswith("statectl") and "[against]" not in name)
        print(f"target: --version and info under 0.3 s -> {'met' if worst < 0.3 else 'NOT met'} (slowest {worst:.3f} s)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
