"""The suite's small stand-alone Java programs (`tests/kafka_standin/`, `tests/file_source_job/`),
apart from its Flink job (`tests/flink/`, whose source hash keys the cached savepoints): each
compiled against a Flink release's jars once per source hash, cached beside the jars, and run
with the JVM flags the Flink job runs with."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.flink_job import (JOB_DIR, JVM_FLAGS, QUICK_JVM_FLAGS, FlinkJobError, _locked, _tool, flink_home,
                               lib_dir, require_jars)

TESTS = Path(__file__).resolve().parents[1]


def _hash(roots: list[Path]) -> str:
    h = hashlib.sha256()
    for root in roots:
        for f in sorted(root.rglob("*.java")):
            h.update(str(f.relative_to(root.parent)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def compiled(program: str, version: str = "2.3.0", parts: tuple[str, ...] = ("src",)) -> Path:
    """The classes of `tests/<program>/<part>` for each of *parts* (one program's source trees, e.g.
    a shared one and one version's), for Flink *version* (javac --release 11)."""
    roots = [TESTS / program / part for part in parts]
    name = program if parts == ("src",) else f"{program}-{'-'.join(parts)}"
    classes = flink_home() / version / f"{name}-{_hash(roots)}"
    if not classes.exists():
        lib = require_jars(version)
        with _locked(flink_home()):
            if not classes.exists():
                tmp = Path(tempfile.mkdtemp(dir=classes.parent, prefix=f"{name}-tmp-"))
                sources = sorted(str(f) for root in roots for f in root.rglob("*.java"))
                run([_tool("javac"), "--release", "11", "-nowarn", "-cp", f"{lib}/*", "-d", str(tmp), *sources],
                    f"javac of {name}", cleanup=tmp)
                tmp.rename(classes)
    return classes


def java(program: str, main: str, *args: str, version: str = "2.3.0", timeout: float = 600,
         parts: tuple[str, ...] = ("src",)) -> str:
    """Runs *main* of *program* (its *parts*) with *args*; its output, or a FlinkJobError with it."""
    cmd = [_tool("java"), *JVM_FLAGS, *QUICK_JVM_FLAGS, f"-Dlog4j.configurationFile={JOB_DIR / 'log4j2.properties'}",
           "-cp", f"{compiled(program, version, parts)}:{lib_dir(version)}/*", main, *args]
    return run(cmd, f"{program} {' '.join(args[:1])}", timeout=timeout)


def run(cmd: list[str], what: str, timeout: float = 600, cleanup: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        raise FlinkJobError(f"{what} failed:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
    return proc.stdout
