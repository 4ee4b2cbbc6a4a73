"""Drives the suite's own Flink job (tests/flink/): finds or fetches a Flink release's jars, compiles
the job once per (version, source hash), makes savepoints and retained checkpoints (cached between
runs of the suite) and restores them into the same job, which dumps what it restored; restores
the dev fixtures' shapes and, in declared mode, any savepoint whose states a description declares;
restores the SQL job's savepoints and feeds them a second batch (mode=sql-restore, restore_sql).

Command line (used by .ci/run and benchmarks):
    python tests/support/flink_job.py fetch [VERSION ...]        # jars of the given (default: all) versions
    python tests/support/flink_job.py make VERSION name=value ...  # one snapshot; prints its path
    python tests/support/flink_job.py declared VERSION SAVEPOINT DESCRIPTION.json [BACKEND]  # prints the dump
    python tests/support/flink_job.py sql VERSION [SHAPE ...]    # SQL job savepoints (SQL_SHAPES); prints their paths
    python tests/support/flink_job.py make 2.3.0 mode=sql-size keys=1000000   # the SQL size job's savepoint
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

VERSIONS = ("1.17.2", "1.20.3", "2.3.0")
JOB_DIR = Path(__file__).resolve().parents[1] / "flink"
METADATA_MAGIC = 0x4960672D

# The --add-opens/--add-exports set of Flink's own config.yaml (env.java.opts.all) for Java 17.
JVM_FLAGS = [
    "-Xmx1g", "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.net", "java.io", "java.nio", "sun.nio.ch", "java.lang.reflect",
        "java.text", "java.time", "java.util", "java.util.concurrent",
        "java.util.concurrent.atomic", "java.util.concurrent.locks")),
]

# The suite's runs are small and short: C1 alone and the serial collector spend about 45% less
# CPU on them (a SQL job making two savepoints: 13 s instead of 24 s), which is most of the
# suite's Flink time on two cores. The benchmarks' size modes run long enough for C2 to pay.
QUICK_JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
SIZE_MODES = ("size", "sql-size")


class FlinkSetupError(RuntimeError):
    """javac, java or a Flink release's jars are missing: the suite cannot run its Flink job."""


class FlinkJobError(RuntimeError):
    """The Flink job failed; the message holds the causes in its output and its end."""


class FlinkJobHung(RuntimeError):
    """The Flink job's JVM ran over its time: not a FlinkJobError, so a test that expects Flink to
    refuse a savepoint fails on a hang instead of passing."""


def flink_home() -> Path:
    """Where each release's jars live: $STATECTL_FLINK_HOME/<version>/lib."""
    return Path(os.environ.get("STATECTL_FLINK_HOME") or Path.home() / ".cache/statectl/flink")


def snapshot_cache() -> Path:
    return Path(os.environ.get("STATECTL_FLINK_SAVEPOINTS")
                or Path.home() / ".cache/statectl/flink-savepoints")


@contextlib.contextmanager
def _locked(folder: Path):
    """Serializes writers of a cache folder across processes (parallel test runs share it)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def lib_dir(version: str) -> Path:
    return flink_home() / version / "lib"


def _has_jars(version: str) -> bool:
    return any(lib_dir(version).glob("flink-dist-*.jar"))


def fetch_jars(version: str) -> Path:
    """The lib/ jars of `apache-flink-libraries==version`, downloaded with pip once."""
    lib = lib_dir(version)
    if _has_jars(version):
        return lib
    with _locked(flink_home()), tempfile.TemporaryDirectory() as tmp:
        if _has_jars(version):
            return lib
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        f"apache-flink-libraries=={version}"], check=True)
        (archive,) = Path(tmp).iterdir()
        staging = Path(tmp) / "lib"
        staging.mkdir()
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                for name in z.namelist():
                    if name.startswith("pyflink/lib/") and name.endswith(".jar"):
                        (staging / Path(name).name).write_bytes(z.read(name))
        else:
            with tarfile.open(archive) as t:
                for m in t.getmembers():
                    if "/deps/lib/" in m.name and m.name.endswith(".jar"):
                        (staging / Path(m.name).name).write_bytes(t.extractfile(m).read())
        lib.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), lib)
    return lib


def require_jars(version: str) -> Path:
    """The jars of Flink *version*, fetched on first use (once, cached), saying so in one line;
    with STATECTL_FLINK_OFFLINE set, missing jars are an error naming the command that fetches them."""
    if not _has_jars(version) and os.environ.get("STATECTL_FLINK_OFFLINE"):
        raise FlinkSetupError(
            f"no Flink {version} jars in {lib_dir(version)}: run `python tests/support/flink_job.py fetch "
            f"{version}` (it pip-downloads apache-flink-libraries=={version}), or set STATECTL_FLINK_HOME")
    if not _has_jars(version):
        print(f"\nfetching the Flink {version} jars (pip download apache-flink-libraries=={version}, "
              f"about 300 MB, once) into {lib_dir(version)}", file=sys.stderr, flush=True)
        try:
            fetch_jars(version)
        except (subprocess.CalledProcessError, OSError) as e:
            raise FlinkSetupError(
                f"no Flink {version} jars in {lib_dir(version)} and fetching them failed ({e}): run "
                f"`python tests/support/flink_job.py fetch {version}`, or set STATECTL_FLINK_HOME") from None
    return lib_dir(version)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise FlinkSetupError(f"`{name}` not found: the Flink tests need a JDK 11+ "
                              "(apt-get install openjdk-17-jdk-headless)")
    return path


def source_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(JOB_DIR.rglob("*")):
        if f.is_file() and f.suffix in (".java", ".properties"):
            h.update(str(f.relative_to(JOB_DIR)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def _compat_dir(version: str) -> Path:
    return JOB_DIR / ("compat1" if version.startswith("1.") else "compat2")


def compile_job(version: str) -> Path:
    """The job's classes for this release (javac --release 11), compiled once per source hash."""
    lib = require_jars(version)
    classes = flink_home() / version / f"classes-{source_hash()}"
    if (classes / "flinkjob" / "Main.class").exists():
        return classes
    with _locked(flink_home()):
        if not (classes / "flinkjob" / "Main.class").exists():
            _javac(version, lib, classes)
    return classes


# Sources that need a newer Flink than the oldest the suite runs: (file name prefix, first release).
NEWER_SOURCES = (("Production", (1, 19)),)


def _javac(version: str, lib: Path, classes: Path) -> None:
    release = tuple(int(x) for x in version.split(".")[:2])
    sources = [f for f in sorted((JOB_DIR / "src").rglob("*.java"))
               if not any(f.name.startswith(prefix) and release < first for prefix, first in NEWER_SOURCES)]
    sources += sorted(_compat_dir(version).rglob("*.java"))
    tmp = Path(tempfile.mkdtemp(dir=classes.parent, prefix="classes-tmp-"))
    proc = subprocess.run([_tool("javac"), "--release", "11", "-nowarn", "-cp", f"{lib}/*", "-d", str(tmp),
                           *map(str, sources)], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FlinkJobError(f"javac failed for Flink {version}:\n{proc.stdout}{proc.stderr}")
    shutil.rmtree(classes, ignore_errors=True)
    tmp.rename(classes)


def run_job(version: str, runs: list[dict[str, str]], timeout: float = 1800) -> str:
    """Runs the job once per knob set, all in one JVM (one MiniCluster after another)."""
    if not version.startswith("2.") and any(k.get("backend") == "forst" for k in runs):
        raise ValueError(f"backend=forst needs Flink 2.x: ForSt (state.backend.type: forst) is not "
                         f"in Flink {version}")
    if any(k.get("backend") == "forst" and k.get("mode") in ("savepoint", "sql") and k.get("checkpoint") == "none"
           and k.get("format") == "canonical" for k in runs):
        # Flink 2.3 fails every task on the trigger: "IllegalStateException: Configured state
        # backend (ForStStateBackend{...}) does not support CANONICAL savepoints", and the job.
        raise ValueError("backend=forst takes NATIVE savepoints only: Flink fails the job on a "
                         "CANONICAL savepoint of ForSt (does not support CANONICAL savepoints)")
    classes = compile_job(version)
    args: list[str] = []
    for i, knobs in enumerate(runs):
        if i:
            args.append("--next")
        args += [f"{k}={v}" for k, v in knobs.items()]
    # a size run's sources hold their events in memory: 10M keys need more than 1 GiB of heap
    quick = ["-Xmx8g"] if any(k.get("mode") in SIZE_MODES for k in runs) else QUICK_JVM_FLAGS
    cmd = [_tool("java"), *JVM_FLAGS, *quick, f"-Dlog4j.configurationFile={JOB_DIR / 'log4j2.properties'}",
           "-cp", f"{classes}:{lib_dir(version)}/*", "flinkjob.Main", *args]
    proc = _run_or_dump(cmd, version, timeout)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).splitlines()
        # the causes, then the end: a shutdown's own warnings may follow the failure's trace
        causes = list(dict.fromkeys(line.strip() for line in lines if line.lstrip().startswith("Caused by:")))
        tail = "\n".join([*causes, "...", *lines[-40:]])
        raise FlinkJobError(f"the Flink {version} job failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _run_or_dump(cmd: list[str], version: str, timeout: float) -> subprocess.CompletedProcess:
    """Runs the job's JVM; one that outlives timeout is killed after its threads' stacks are taken,
    and its main thread's stack is the failure's message (where it hung, not only that it did)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stack = _main_thread_stack(proc.pid)
            proc.kill()
            out, err = proc.communicate()
            raise FlinkJobHung(f"the Flink {version} job ran over {timeout:.0f} s; its main thread then:\n"
                               f"{stack}\n... its output's end:\n"
                               + "\n".join((out + err).splitlines()[-40:])) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _main_thread_stack(pid: int) -> str:
    """The stack of JVM *pid*'s main thread by jstack (all it printed if no main thread is in it);
    a jstack that does not answer leaves the JVM to be killed all the same."""
    try:
        stacks = subprocess.run([_tool("jstack"), str(pid)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "(jstack did not answer in 60 s)"
    main = [t for t in stacks.stdout.split("\n\n") if t.startswith('"main"')]
    return main[0] if main else stacks.stdout + stacks.stderr


# Knobs and their defaults (see tests/flink/README.md). Python names use '_' for the job's '-'.
DEFAULTS = {
    "mode": "savepoint", "seed": "8675309", "keys": "30", "events": "480", "partitions": "6",
    "value_max": "5000", "key_type": "long", "max_parallelism": "128", "parallelism": "2",
    "states": "all", "uid_prefix": "", "backend": "rocksdb", "format": "canonical",
    "checkpoint": "none", "compression": "false", "inline_threshold": "default",
    "pojo_class": "flinkjob.Profile", "key_set": "job",
}


# The SQL jobs' knob without a default (table.exec.state.ttl, e.g. "1 d"; tests/flink/README.md "The
# SQL job"): absent unless given, so the knobs of the savepoints made without it stay as they were.
SQL_STATE_TTL = "state_ttl"
# The SQL jobs' knob extra_statement=True: one more statement, ahead of the others (a changed job
# whose stateful operators all get new ids); absent unless given, like state_ttl.
SQL_EXTRA = "extra_statement"
# The SQL jobs' knob name_type (e.g. "VARCHAR(64)"): src's name column cast to it (absent: STRING).
SQL_NAME_TYPE = "name_type"
# The SQL jobs' knob extra_aggregate (e.g. "SUM(v)"): one more aggregate (a2) in the extra statement's
# SELECT, whose accumulator row grows (absent: none).
SQL_EXTRA_AGGREGATE = "extra_aggregate"
# The SQL jobs' knob extra_filter (e.g. "v > 100"): the extra statement aggregates only the rows it keeps.
SQL_EXTRA_FILTER = "extra_filter"
SQL_OPTIONAL = (SQL_STATE_TTL, SQL_EXTRA, SQL_NAME_TYPE, SQL_EXTRA_AGGREGATE, SQL_EXTRA_FILTER)
# The DataStream job's knobs absent unless given (mode savepoint and restore): no_uid (roles built
# without a uid, comma-separated) and chain_split (the role that starts a new chain).
DS_OPTIONAL = ("no_uid", "chain_split")


def knobs(**kw) -> dict[str, str]:
    """The job's knobs with defaults filled in, as the strings it takes on its command line."""
    unknown = set(kw) - set(DEFAULTS) - set(SQL_OPTIONAL) - set(DS_OPTIONAL)
    if unknown:
        raise TypeError(f"unknown Flink job knobs: {sorted(unknown)}")
    for knob in SQL_OPTIONAL + DS_OPTIONAL:
        modes = ("sql", "sql-restore") if knob in SQL_OPTIONAL else ("savepoint", "restore", None)
        if kw.get(knob) in (None, False):
            kw.pop(knob, None)
        elif kw.get("mode") not in modes:
            raise TypeError(f"{knob} is a knob of mode={' and mode='.join(m for m in modes if m)}, "
                            f"not of mode={kw.get('mode')}")
    merged = {**DEFAULTS, **{k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in kw.items()}}
    if merged["mode"] == "size":
        merged.update(events=merged["keys"], key_type="string", states="base")
    if merged["mode"] == "sql-size":  # INT keys unless told (int or long)
        merged["key_type"] = str(kw.get("key_type", "int"))
    return {k.replace("_", "-"): v for k, v in merged.items()}


@dataclass(frozen=True)
class Snapshot:
    """A savepoint or retained checkpoint made by the job, with the state it holds."""

    path: Path        # the savepoint directory, or the checkpoint's chk-N directory
    expected: dict    # expected.json
    workdir: Path     # the run's folder (expected.json, checkpoints/ or savepoints/)

    @property
    def metadata(self) -> Path:
        return self.path / "_metadata"


def _cache_dir(version: str, kn: dict[str, str]) -> Path:
    key = json.dumps({"version": version, "knobs": kn, "source": source_hash()}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return snapshot_cache() / f"{version}-{kn['mode']}-{kn['backend']}-{digest}"


def operator_id(uid: str) -> dict:
    """Flink's OperatorID of a uid (murmur3_x64_128, seed 0), as expected.json spells it."""
    import mmh3

    raw = mmh3.hash_bytes(uid.encode(), 0, x64arch=True)
    lower, upper = struct.unpack(">qq", raw)
    return {"operator_id": raw.hex(), "operator_id_lower_part": lower, "operator_id_upper_part": upper}


def _add_operator_ids(workdir: Path) -> None:
    path = workdir / "expected.json"
    expected = json.loads(path.read_text())
    for uid, op in expected["operators"].items():
        ids = operator_id(uid)
        expected["operators"][uid] = {"uid": op["uid"], "role": op["role"], **ids,
                                      **{k: v for k, v in op.items() if k not in ("uid", "role")}}
    path.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


def _load(workdir: Path) -> Snapshot:
    expected = json.loads((workdir / "expected.json").read_text())
    return Snapshot(Path(expected["savepoint_path"]), expected, workdir)


def make_snapshots(version: str, specs: list[dict]) -> list[Snapshot]:
    """Snapshots for several knob sets (kwargs of knobs()); the missing ones made in one JVM.

    Each is made in its final cache folder (a retained checkpoint's `_metadata` names its shared
    files by absolute path, so it cannot move) and counts as cached once `done` is written there.
    """
    dirs = [_cache_dir(version, knobs(**s)) for s in specs]
    if not all((d / "done").exists() for d in dirs):  # cached ones need no lock: `done` is written last
        with _locked(snapshot_cache()):
            _make_missing(version, dirs, specs)
    return [_load(d) for d in dirs]


def _make_missing(version: str, dirs: list[Path], specs: list[dict]) -> None:
    todo = [(d, knobs(**s)) for d, s in zip(dirs, specs) if not (d / "done").exists()]
    todo = list({str(d): (d, k) for d, k in todo}.values())
    if todo:
        for d, _ in todo:
            shutil.rmtree(d, ignore_errors=True)
        start = time.monotonic()
        run_job(version, [{**k, "out": str(d)} for d, k in todo])
        per = (time.monotonic() - start) / len(todo)
        for d, k in todo:
            if not k["mode"].startswith("sql"):  # the SQL jobs write their operators' ids (stream graph hashes)
                _add_operator_ids(d)
            (d / "done").write_text(f"{per:.1f} s\n")


def make_snapshot(version: str = "2.3.0", **kw) -> Snapshot:
    return make_snapshots(version, [kw])[0]


# The SQL job's savepoint shapes (mode=sql, tests/flink/README.md "The SQL job"), all made in one JVM;
# the -ttl ones with table.exec.state.ttl of a day (TTL-wrapped state that no test outlives).
SQL_SHAPES = {
    "hashmap-canonical": dict(backend="hashmap", format="canonical"),
    "hashmap-native": dict(backend="hashmap", format="native"),
    "rocksdb-canonical": dict(backend="rocksdb", format="canonical"),
    "rocksdb-native": dict(backend="rocksdb", format="native"),
    "hashmap-canonical-ttl": dict(backend="hashmap", format="canonical", state_ttl="1 d"),
    "rocksdb-canonical-ttl": dict(backend="rocksdb", format="canonical", state_ttl="1 d"),
}
SQL_VERSIONS = ("1.20.3", "2.3.0")


def make_sql_snapshots(version: str, specs: list[dict] | None = None) -> list[Snapshot]:
    """Savepoints of the SQL job (mode=sql), one per spec (knobs() kwargs: backend, format,
    parallelism, max_parallelism, seed, keys, events, value_max, compression, inline_threshold;
    default: every SQL_SHAPES entry), the missing ones made in one JVM and cached like
    make_snapshots. Each Snapshot's expected is the SQL expected.json (operators by name)."""
    specs = list(SQL_SHAPES.values()) if specs is None else specs
    return make_snapshots(version, [{**s, "mode": "sql"} for s in specs])


def make_sql_snapshot(version: str = "2.3.0", backend: str = "rocksdb", format: str = "canonical",
                      **kw) -> Snapshot:
    """One savepoint of the SQL job; see make_sql_snapshots."""
    return make_sql_snapshots(version, [dict(backend=backend, format=format, **kw)])[0]


def make_sql_size_snapshots(version: str = "2.3.0", keys: int = 1_000_000, shapes=(("rocksdb", "canonical"),),
                            **kw) -> list[Snapshot]:
    """Savepoints of the SQL size job (mode=sql-size: one GROUP BY over *keys* keys, tests/flink/README.md
    "SQL size mode"), one per (backend, format), the missing ones made in one JVM and cached like
    make_snapshots; *kw*: other knobs (key_type int or long, parallelism, max_parallelism)."""
    return make_snapshots(version, [dict(mode="sql-size", keys=keys, backend=b, format=f, **kw) for b, f in shapes])


def restore(version: str, savepoint: Path, out: Path, **kw) -> dict:
    """Starts the job from `savepoint` (every piece of state must be claimed) and returns the JSON
    dump of what it restored: operator and broadcast state per subtask, every known key's keyed
    state read through the state API, and the event-time timers and windows a final watermark fires.
    `kw` are the knobs of the job that made it (same keys and uids); `backend` may differ."""
    kn = knobs(**{**kw, "mode": "restore"})
    run_job(version, [{**kn, "out": str(out), "restore-from": str(savepoint)}])
    return json.loads((out / "restored.json").read_text())


def restore_snapshots(version: str, items: list[tuple[Snapshot, str]]) -> list[dict]:
    """Restores cached snapshots (each with a state backend) in one JVM; each dump is cached in
    its snapshot's folder, so a warm run restores nothing."""
    outs = [s.workdir / f"restored-{backend}" for s, backend in items]
    todo = []
    for (snap, backend), out in zip(items, outs):
        if (out / "restored.json").exists():
            continue
        kn = {k.replace("-", "_"): v for k, v in snap.expected["scenario"]["knobs"].items()
              if k.replace("-", "_") in DEFAULTS}
        kn.update(mode="restore", backend=backend)
        todo.append({**knobs(**kn), "out": str(out), "restore-from": str(snap.path)})
    _run_restores(version, {t["out"]: t for t in todo})
    return [json.loads((out / "restored.json").read_text()) for out in outs]


def _run_restores(version: str, runs: dict[str, dict[str, str]]) -> None:
    """Runs the restores (knobs by output folder) in one JVM, each into a folder of this process
    and then moved to its output folder, so no lock is held while Flink runs (another process
    restoring the same savepoint meanwhile: the first dump moved in stays)."""
    if not runs:
        return
    staged = {out: f"{out}.{os.getpid()}.tmp" for out in runs}
    try:
        run_job(version, [{**kn, "out": staged[out]} for out, kn in runs.items()])
        for out, tmp in staged.items():
            if not (Path(out) / "restored.json").exists():
                shutil.rmtree(out, ignore_errors=True)  # a dump an interrupted run began
                with contextlib.suppress(OSError):
                    os.rename(tmp, out)
    finally:
        for tmp in staged.values():
            shutil.rmtree(tmp, ignore_errors=True)


def _digest_tree(folder: Path) -> str:
    """A digest of every file under *folder* (names and bytes): a restore dump's cache key."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _restore_cached(version: str, items: list[tuple[Path | None, dict[str, str]]]) -> list[dict]:
    """Restores each (savepoint, knobs of restore or declared mode) in one JVM; each dump is cached under
    $STATECTL_FLINK_SAVEPOINTS/restores by the savepoint's content, the knobs and the job's
    sources, so a savepoint written again byte for byte is not restored twice. A savepoint of None
    starts the job without one (sql-restore mode's reference and empty-state runs)."""
    outs = []
    for path, kn in items:
        key = json.dumps({"version": version, "knobs": kn, "source": source_hash(),
                          "savepoint": None if path is None else _digest_tree(Path(path))}, sort_keys=True)
        outs.append(snapshot_cache() / "restores" / hashlib.sha256(key.encode()).hexdigest()[:16])
    _run_restores(version, {str(out): {**kn, **({} if path is None else {"restore-from": str(Path(path).resolve())})}
                            for (path, kn), out in zip(items, outs) if not (out / "restored.json").exists()})
    return [json.loads((out / "restored.json").read_text()) for out in outs]


# mode=sql-restore's own knobs (tests/flink/README.md "Restoring the SQL job") and their defaults.
SQL_RESTORE_DEFAULTS = {"first_batch": "false", "allow_non_restored": "false", "more_keys": "0,1,2,28,29,30,31",
                        "more_events": "12", "more_watermark": "60000"}
# The knobs of the savepoint's job that the restored job takes over: its input and shape.
_SQL_INPUT_KNOBS = ("seed", "keys", "events", "value_max", "parallelism", "max_parallelism", "format",
                    *SQL_OPTIONAL)


def sql_restore_knobs(savepoint: Snapshot | Path | None, backend: str = "rocksdb", **kw) -> dict[str, str]:
    """The knobs of one mode=sql-restore run: the input and shape of *savepoint*'s job (a Snapshot;
    a Path or None: the defaults), then *kw* (knobs() kwargs such as parallelism, max_parallelism,
    seed, and the SQL_RESTORE_DEFAULTS knobs)."""
    base = {} if not isinstance(savepoint, Snapshot) else {
        k.replace("-", "_"): v for k, v in savepoint.expected["scenario"]["knobs"].items()
        if k.replace("-", "_") in _SQL_INPUT_KNOBS}
    own = {k: kw.pop(k) for k in list(kw) if k in SQL_RESTORE_DEFAULTS}
    own = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in {**SQL_RESTORE_DEFAULTS, **own}.items()}
    return {**knobs(**{**base, **kw, "mode": "sql-restore", "backend": backend}),
            **{k.replace("_", "-"): v for k, v in own.items()}}


def restore_sqls(version: str, items: list[tuple[Snapshot | Path | None, dict]]) -> list[dict]:
    """Runs mode=sql-restore once per (savepoint, kwargs of sql_restore_knobs), all in one JVM, each
    dump cached by the savepoint's content and the knobs; a savepoint Flink cannot restore fails the
    run (FlinkJobError). A Path (e.g. a rewritten savepoint) is restored with the input knobs *kw*
    gives (default: the defaults'). A savepoint of None starts without state: with first_batch=True
    that is the reference run (both batches in one job), else empty state."""
    def path(savepoint):
        return savepoint.path if isinstance(savepoint, Snapshot) else savepoint
    return _restore_cached(version, [(path(sp), sql_restore_knobs(sp, **kw)) for sp, kw in items])


def sql_shape_knobs(shape: str, **kw) -> dict:
    """restore_sqls kwargs for a savepoint of SQL_SHAPES[*shape*]'s job or one written from it (a Path,
    which brings no knobs): that shape's backend and TTL, then *kw*."""
    spec = SQL_SHAPES[shape]
    return dict(backend=spec["backend"], state_ttl=spec.get(SQL_STATE_TTL), **kw)


def restore_sql(version: str, savepoint: Snapshot | Path | None, backend: str = "rocksdb", **kw) -> dict:
    """The SQL job restored from *savepoint* and fed the second batch: restored.json (see restore_sqls)."""
    return restore_sqls(version, [(savepoint, dict(backend=backend, **kw))])[0]


def materialize(rows: list[list], changelog: list[list]) -> list[list]:
    """The table *rows* becomes once *changelog* ([kind, cells...]) is applied, sorted like SqlModel."""
    table = [list(r) for r in rows]
    for kind, *row in changelog:
        if kind in ("+I", "+U"):
            table.append(row)
        elif row in table:
            table.remove(row)
        else:
            raise ValueError(f"the changelog retracts a row the table does not hold: {[kind, *row]}")
    return sorted_rows(table)


def sorted_rows(rows: list[list]) -> list[list]:
    """*rows* in one order whatever the order they came in (for comparing tables and changelogs)."""
    return sorted(rows, key=lambda r: json.dumps(r, ensure_ascii=False, separators=(",", ":")))


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flink-dev"
# The dev fixtures' job differs from this one by its POJO's class and its Long and Integer keys
# (knob key-set=fixtures); its String and Tuple2 keys are this job's (user-%03d with a non-ASCII
# suffix on every 5th key).
FIXTURE_POJO_CLASS = "flinkfixtures.Profile"
FIXTURE_KEY_KNOBS = {"key-format": "user-%03d", "unicode-every": "5"}


def fixture_expected(name: str) -> dict:
    """A dev fixture's expected.json (tests/fixtures/flink-dev/<name>)."""
    return json.loads((FIXTURES / name / "expected.json").read_text())


def fixture_knobs(name: str) -> dict[str, str]:
    """The restore-mode knobs of a job shaped like the one that made dev fixture *name*."""
    fixture = fixture_expected(name)["scenario"]["knobs"]
    kw = {}
    for k, v in fixture.items():
        if k in FIXTURE_KEY_KNOBS:
            if v != FIXTURE_KEY_KNOBS[k]:
                raise ValueError(f"dev fixture {name}: knob {k}={v} is not this job's {FIXTURE_KEY_KNOBS[k]}")
        else:
            kw[k.replace("-", "_")] = v
    return knobs(**kw, pojo_class=FIXTURE_POJO_CLASS, key_set="fixtures", mode="restore")


CHECKS = ("job", "declared")


def restore_fixture_dumps(items: list[tuple[str, Path, str]], version: str = "2.3.0", *,
                          max_parallelism: int | None = None, checks=CHECKS) -> list[dict[str, dict]]:
    """The dumps behind restore_fixture_shapes: per item, {check: restored.json}, all in one JVM."""
    runs = []
    for name, path, backend in items:
        if "job" in checks:
            kn = {**fixture_knobs(name), "backend": backend}
            if max_parallelism is not None:
                kn["max-parallelism"] = str(max_parallelism)
            runs.append((Path(path), kn))
        if "declared" in checks:
            description = job_description(fixture_expected(name))
            if max_parallelism is not None:
                for op in description["operators"]:
                    op["max_parallelism"] = max_parallelism
            runs.append((Path(path), _declared_knobs(description, backend)))
    dumps = iter(_restore_cached(version, runs))
    return [{check: next(dumps) for check in CHECKS if check in checks} for _ in items]


def restore_fixture_shapes(items: list[tuple[str, Path, str]], version: str = "2.3.0", *,
                           max_parallelism: int | None = None, ttl_bounds: tuple[int, int] | None = None,
                           checks=CHECKS) -> list[list[str]]:
    """For each (dev fixture name, savepoint, backend): how what Flink restored from *savepoint*
    (the fixture's own `savepoint/`, or one written with its state) differs from the fixture's
    expected.json; [] when it restores exactly. Two checks, all in one JVM, dumps cached by content:
    "job" restores into a job of the fixture's shape, which reads every known key through the state
    API (restore_mismatches); "declared" restores into declared mode with job_description(), which
    dumps every key of every state, TTL timestamps and all timers (declared_mismatches).
    *max_parallelism*: the savepoint's when it was rescaled; *ttl_bounds*: (lo, hi) that every
    TTL timestamp must lie in, instead of the fixture's own bounds (a writer writes current ones)."""
    dumps = restore_fixture_dumps(items, version, max_parallelism=max_parallelism, checks=checks)
    out = []
    for (name, _, _), dump in zip(items, dumps):
        expected = fixture_expected(name)
        problems = restore_mismatches(expected, dump["job"]) if "job" in dump else []
        if "declared" in dump:
            problems += [f"declared: {p}" for p in declared_mismatches(expected, dump["declared"], ttl_bounds)]
        out.append(problems)
    return out


def restore_fixture_shape(name: str, savepoint: Path, backend: str = "rocksdb", version: str = "2.3.0",
                          **kw) -> list[str]:
    """restore_fixture_shapes for one savepoint: [] when it restores with exactly fixture *name*'s state."""
    return restore_fixture_shapes([(name, savepoint, backend)], version, **kw)[0]


def restore_declared(version: str, savepoint: Path, description: dict, backend: str = "rocksdb") -> dict:
    """Restores *savepoint* into a job declaring the states *description* lists (declared mode,
    tests/flink/README.md) and returns its dump of everything restored; cached by content."""
    return restore_declared_many(version, [(savepoint, description, backend)])[0]


def restore_declared_many(version: str, items: list[tuple[Path, dict, str]]) -> list[dict]:
    """restore_declared for several (savepoint, description, backend), in one JVM."""
    return _restore_cached(version, [(Path(path), _declared_knobs(description, backend))
                                     for path, description, backend in items])


def _declared_knobs(description: dict, backend: str) -> dict[str, str]:
    """Declared mode's knobs; the description is written once under its content's digest."""
    text = json.dumps(description, indent=1, sort_keys=True, ensure_ascii=False)
    spec = snapshot_cache() / "declared" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not spec.exists():
        spec.parent.mkdir(parents=True, exist_ok=True)
        tmp = spec.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.rename(spec)
    return {"mode": "declared", "backend": backend, "spec": str(spec)}


KEY_TYPES = {"long": "Long", "int": "Integer", "string": "String", "tuple": "Tuple2<String, Integer>"}
# proc's keyed states per state group, as declared mode spells them.
PROC_STATES = {
    "base": [
        {"name": "count", "kind": "VALUE", "type": "Long"},
        {"name": "events", "kind": "LIST", "element_type": "String"},
        {"name": "attrs", "kind": "MAP", "user_key_type": "String", "user_value_type": "Long"},
        {"name": "sum", "kind": "REDUCING", "type": "Long"},
        {"name": "avg", "kind": "AGGREGATING", "accumulator_type": "Tuple2<Long, Long>"},
    ],
    "scalars": [
        {"name": "ratio", "kind": "VALUE", "type": "Double"},
        {"name": "flag", "kind": "VALUE", "type": "Boolean"},
        {"name": "last_type", "kind": "VALUE", "type": "String"},
        {"name": "values", "kind": "LIST", "element_type": "Long"},
        {"name": "by_bucket", "kind": "MAP", "user_key_type": "Long", "user_value_type": "String"},
    ],
    "composite": [
        {"name": "last", "kind": "VALUE", "type": "Tuple2<String, Long>"},
        {"name": "profile", "kind": "VALUE", "type": "POJO"},  # the pojo-class knob
    ],
    "ttl": [
        {"name": "ttl_last", "kind": "VALUE", "type": "String", "ttl": True},
        {"name": "ttl_seen", "kind": "MAP", "user_key_type": "String", "user_value_type": "Long", "ttl": True},
    ],
    "collections": [
        {"name": "recent", "kind": "VALUE", "type": "List<Long>"},
        {"name": "type_counts", "kind": "VALUE", "type": "Map<String, Integer>"},
        {"name": "marks", "kind": "LIST", "element_type": "Tuple2<Integer, Boolean>"},
    ],
    "kryo": [],  # proc's `kryo` (a KryoSerializer value): declared mode has no Kryo types
}


ALL_GROUPS = ("scalars", "composite", "ttl")  # states=all; collections and kryo only when named


def job_description(expected: dict) -> dict:
    """The declared-mode description of the states of the job (or dev fixture) that wrote
    *expected* (its expected.json): src, union-op, bcast, proc and win with their uids; a new
    description on every call, which the caller may change."""
    kn = expected["scenario"]["knobs"]
    key = KEY_TYPES[kn.get("key-type", DEFAULTS["key_type"])]
    states = kn.get("states", "all")
    groups = ["base", *(ALL_GROUPS if states == "all" else states.split(","))]
    pojo = kn.get("pojo-class") or (FIXTURE_POJO_CLASS if "fixture" in expected else DEFAULTS["pojo_class"])
    ops = {op["role"]: op for op in expected["operators"].values()}

    def op(role: str, **body) -> dict:
        return {"uid": ops[role]["uid"], "parallelism": ops[role]["parallelism"],
                "max_parallelism": ops[role]["max_parallelism"], **body}

    # Copies of PROC_STATES' entries: a caller may change its description (a test declares a
    # wrong type) without changing what every later description declares.
    proc_states = [{**s, "type": pojo} if s.get("type") == "POJO" else dict(s)
                   for g in dict.fromkeys(groups) for s in PROC_STATES[g]]
    return {"operators": [
        op("src", operator_state=[{"name": "offsets", "distribution": "SPLIT_DISTRIBUTE", "element_type": "Long"}]),
        op("union-op", operator_state=[{"name": "union-counts", "distribution": "UNION", "element_type": "String"}]),
        op("bcast", broadcast_state=[{"name": "rules", "key_type": "String", "value_type": "String"}]),
        op("proc", key_type=key, keyed_state=proc_states,
           timers={"service": "user-timers", "namespace": "VoidNamespace"}),
        op("win", key_type=key, keyed_state=[{"name": "window-contents", "kind": "REDUCING",
                                              "type": f"Tuple2<{key}, Long>", "namespace": "TimeWindow"}],
           timers={"service": "window-timers", "namespace": "TimeWindow"}),
    ]}


def declared_mismatches(expected: dict, dump: dict, ttl_bounds: tuple[int, int] | None = None) -> list[str]:
    """Where a declared-mode dump of a savepoint differs from the state its expected.json names
    (the job's or a dev fixture's layout): operator, union and broadcast state per subtask, every
    key's keyed state (AGGREGATING: the stored accumulator; TTL: values, and each last-access
    timestamp within the expected bounds, or within *ttl_bounds* when given), pending event- and
    processing-time timers of proc (the event-time ones all fired), win's windows and their
    timers. Empty when all agree. Only the states expected.json names are compared (the dump
    holds only declared ones; Flink refuses a savepoint operator the job does not declare)."""
    problems: list[str] = []

    def check(what: str, want, got) -> None:
        if want != got:
            problems.append(f"{what}: expected {json.dumps(want, ensure_ascii=False)[:300]}, "
                            f"restored {json.dumps(got, ensure_ascii=False)[:300]}")

    def records(items: list) -> list:
        return sorted(items, key=lambda r: json.dumps(r, sort_keys=True))

    for uid, op in expected["operators"].items():
        got = dump["operators"].get(uid, {})
        role = op["role"]
        if role == "src":
            check(f"{uid} offsets", op["operator_state"]["offsets"]["subtasks"],
                  got.get("operator_state", {}).get("offsets", {}).get("subtasks"))
        elif role == "union-op":
            subtasks = op["operator_state"]["union-counts"]["subtasks"]
            union = sorted(e for s in subtasks.values() for e in s)
            have = got.get("operator_state", {}).get("union-counts", {}).get("subtasks", {})
            check(f"{uid} union-counts", {s: union for s in subtasks}, {s: sorted(v) for s, v in have.items()})
        elif role == "bcast":
            check(f"{uid} rules", op["broadcast_state"]["rules"]["subtasks"],
                  got.get("broadcast_state", {}).get("rules", {}).get("subtasks"))
        elif role == "proc":
            for name, state in op["keyed_state"].items():
                have = got.get("keyed_state", {}).get(name, {})
                want = state["values"]
                if state["kind"] == "AGGREGATING":
                    want = {k: v["accumulator"] for k, v in want.items()}
                check(f"{uid} state {name}", want, have.get("values"))
                if "ttl" in state:
                    bounds = state["timestamps"]["bounds"]
                    if ttl_bounds is not None:
                        bounds = _replace_bounds(bounds, list(ttl_bounds))
                    _check_ttl(problems, f"{uid} state {name}", bounds, have.get("last_access", {}))
            timers = got.get("timers", {})
            pending = op["timers"]["event_time"]["values"]
            check(f"{uid} event-time timers", pending, timers.get("event_time", {}).get("values"))
            check(f"{uid} event-time timers fired", pending, timers.get("event_time", {}).get("fired"))
            check(f"{uid} processing-time timers", op["timers"]["processing_time"]["values"],
                  timers.get("processing_time", {}).get("values"))
        elif role == "win":
            contents = got.get("keyed_state", {}).get("window-contents", {}).get("values", [])
            check(f"{uid} windows", records(op["keyed_state"]["window-contents"]["values"]), records(contents))
            timers = got.get("timers", {}).get("event_time", {})
            want = records(op["timers"]["event_time"]["values"])
            check(f"{uid} window timers", want, records(timers.get("values", [])))
            check(f"{uid} window timers fired", want, records(timers.get("fired", [])))
    return problems


def _replace_bounds(bounds, pair: list):
    """The same nesting with every [lo, hi] leaf replaced by *pair*."""
    return {k: _replace_bounds(v, pair) for k, v in bounds.items()} if isinstance(bounds, dict) else pair


def _check_ttl(problems: list[str], what: str, bounds: dict, stamps: dict) -> None:
    """Each last-access timestamp within its [lo, hi] bound (nested like the values)."""
    def walk(path: str, b, t) -> None:
        if isinstance(b, dict):
            if not isinstance(t, dict) or set(b) != set(t):
                problems.append(f"{what} timestamps{path}: expected entries {sorted(b)}, restored {t!r:.200}")
                return
            for k in b:
                walk(f"{path}[{k}]", b[k], t[k])
        elif not (isinstance(t, int) and b[0] <= t <= b[1]):
            problems.append(f"{what} timestamp{path}: {t!r} not within [{b[0]}, {b[1]}]")
    walk("", bounds, stamps)


def restore_mismatches(expected: dict, restored: dict) -> list[str]:
    """Where a restore dump differs from expected.json (empty when every check passes).

    Compared: SPLIT_DISTRIBUTE lists per subtask, the UNION list (every subtask gets all
    subtasks' entries), broadcast maps per subtask, keyed values per key (AGGREGATING: its
    result; TTL states: the values, not their timestamps), pending event-time timers of proc
    and pending windows of win (both fired by the final watermark)."""
    problems: list[str] = []

    def check(what: str, want, got) -> None:
        if want != got:
            problems.append(f"{what}: expected {json.dumps(want, ensure_ascii=False)[:300]}, "
                            f"restored {json.dumps(got, ensure_ascii=False)[:300]}")

    got_ops = restored["operators"]
    for uid, op in expected["operators"].items():
        role = op["role"]
        got = got_ops.get(uid, {})
        if role == "src":
            check(f"{uid} offsets", op["operator_state"]["offsets"]["subtasks"],
                  got["operator_state"]["offsets"]["subtasks"])
        elif role == "union-op":
            subtasks = op["operator_state"]["union-counts"]["subtasks"]
            union = [e for s in sorted(subtasks, key=int) for e in subtasks[s]]
            want = {s: sorted(union) for s in subtasks}
            have = {s: sorted(v) for s, v in got["operator_state"]["union-counts"]["subtasks"].items()}
            check(f"{uid} union-counts", want, have)
        elif role == "bcast":
            check(f"{uid} rules", op["broadcast_state"]["rules"]["subtasks"],
                  got["broadcast_state"]["rules"]["subtasks"])
        elif role == "proc":
            have_states = got["keyed_state"]
            for name, state in op["keyed_state"].items():
                want = state["values"]
                if state["kind"] == "AGGREGATING":
                    want = {k: {"result": v["result"]} for k, v in want.items()}
                check(f"{uid} state {name}", want, have_states.get(name, {}).get("values", {}))
            check(f"{uid} event-time timers fired", op["timers"]["event_time"]["values"],
                  got["timers"]["event_time"]["values"])
        elif role == "win":
            check(f"{uid} windows fired", op["keyed_state"]["window-contents"]["values"],
                  got["keyed_state"]["window-contents"]["values"])
            check(f"{uid} window timers fired", op["timers"]["event_time"]["values"],
                  got["timers"]["event_time"]["values"])
    return problems


def metadata_header(path: Path) -> tuple[int, int]:
    """(magic, version) of a `_metadata` file."""
    with open(path, "rb") as f:
        return struct.unpack(">II", f.read(8))


def _main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("fetch", "make", "declared", "sql") or (argv[0] == "declared" and len(argv) not in (4, 5)):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "fetch":
        for v in argv[1:] or VERSIONS:
            fetch_jars(v)
        return 0
    if argv[0] == "sql":
        version, *shapes = argv[1:]
        for shape, snap in zip(shapes or SQL_SHAPES, make_sql_snapshots(version, [SQL_SHAPES[x] for x in shapes or SQL_SHAPES])):
            print(shape, snap.path)
        return 0
    if argv[0] == "declared":
        version, savepoint, description, *backend = argv[1:]
        dump = restore_declared(version, Path(savepoint), json.loads(Path(description).read_text()), *backend)
        print(json.dumps(dump, indent=1, ensure_ascii=False))
        return 0
    version, *pairs = argv[1:]
    kw = dict(p.split("=", 1) for p in pairs)
    snap = make_snapshot(version, **{k.replace("-", "_"): v for k, v in kw.items()})
    print(snap.path)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
