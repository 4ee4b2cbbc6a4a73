"""Runs `tests/kryo_probe` (values written by a Flink release's own KryoSerializer) and hands the
suite its samples: (name, declared class, snapshot bytes, value bytes) and the compiled classes."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from support.flink_job import JVM_FLAGS, _tool, flink_home, lib_dir, require_jars

PROBE_DIR = Path(__file__).resolve().parents[1] / "kryo_probe"
PROBE = PROBE_DIR / "kryoprobe" / "KryoProbe.java"


@dataclass(frozen=True)
class Sample:
    name: str
    type_class: str
    snapshot: bytes
    value: bytes


def compiled(version: str) -> Path:
    """The probe's classes for *version*, compiled once per source."""
    lib = require_jars(version)
    sources = sorted(PROBE_DIR.rglob("*.java"))
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in sources)).hexdigest()[:12]
    out = flink_home() / version / f"kryo-probe-{digest}"
    if not (out / "kryoprobe" / "KryoProbe.class").exists():
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix="kryo-probe-tmp-"))
        proc = subprocess.run([_tool("javac"), "--release", "11", "-nowarn", "-cp", f"{lib}/*", "-d", str(tmp),
                               *map(str, sources)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed for the Kryo probe ({version}):\n{proc.stderr}")
        if not out.exists():
            tmp.rename(out)
    return out


def run(version: str, *args: str) -> str:
    classes = compiled(version)
    proc = subprocess.run([_tool("java"), *JVM_FLAGS, "-XX:TieredStopAtLevel=1", "-cp",
                           f"{classes}:{lib_dir(version)}/*", "kryoprobe.KryoProbe", *args],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"the Kryo probe failed ({version}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def samples(version: str) -> dict[str, Sample]:
    out = {}
    for line in run(version, "samples").splitlines():
        name, cls, snap, value = line.split()
        out[name] = Sample(name, cls, bytes.fromhex(snap), bytes.fromhex(value))
    return out


def registrations(version: str) -> dict[int, str]:
    """Flink's KryoSerializer's class table (for `Object`): id -> class."""
    table = {}
    for line in run(version, "table").splitlines():
        i, cls, _ = line.split()
        table[int(i)] = cls
    return table
