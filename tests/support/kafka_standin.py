"""KafkaSource split and enumerator bytes made by Java: no Kafka broker or connector jar is
available offline, so `tests/kafka_standin/` holds small stand-ins of the connector's
serializers (its split serializer and each enumerator state layout, a two-field
`TopicPartition`) written after flink-connector-kafka's serializer sources, compiled against
a Flink release's jars (its own `SimpleVersionedSerialization` frames the reader's splits, its
connector-base `SerdeUtils` writes the v0 enumerator state). Compiled and run once per source
hash; the bytes are cached beside the release's jars."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.flink_job import FlinkJobError, _locked, _tool, flink_home, require_jars

SOURCES = Path(__file__).resolve().parents[1] / "kafka_standin" / "src"
VERSION = "2.3.0"


def _hash() -> str:
    h = hashlib.sha256()
    for f in sorted(SOURCES.rglob("*.java")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def standin_bytes() -> dict[str, bytes]:
    """Every case the stand-ins write (`Main.java`), by name: ``split-*`` (a SourceReaderState
    element) and ``enum-v*`` (the enumerator serializer's bytes)."""
    out = flink_home() / VERSION / f"kafka-standin-{_hash()}"
    if not (out / "enum-v0.bin").exists():
        with _locked(flink_home()):
            if not (out / "enum-v0.bin").exists():
                _make(require_jars(VERSION), out)
    return {f.stem: f.read_bytes() for f in sorted(out.glob("*.bin"))}


def _make(lib: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        classes, made = Path(tmp) / "classes", Path(tmp) / "out"
        for cmd in ([_tool("javac"), "--release", "11", "-nowarn", "-cp", f"{lib}/*", "-d", str(classes),
                     *map(str, sorted(SOURCES.rglob("*.java")))],
                    [_tool("java"), "-cp", f"{classes}:{lib}/*", "kafkastandin.Main", str(made)]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise FlinkJobError(f"kafka stand-in failed ({cmd[0]}):\n{proc.stdout}{proc.stderr}")
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(made, out)
