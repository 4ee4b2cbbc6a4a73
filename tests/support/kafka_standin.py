"""KafkaSource split and enumerator bytes made by Java: no Kafka broker or connector jar is
available offline, so `tests/kafka_standin/` holds small stand-ins of the connector's
serializers (its split serializer and each enumerator state layout, a two-field
`TopicPartition`) written after flink-connector-kafka's serializer sources, compiled against
Flink 2.3's jars (its own `SimpleVersionedSerialization` frames the reader's splits, its
connector-base `SerdeUtils` writes the v0 enumerator state, its `FileSourceSplitSerializer`
writes the FileSource cases). Run once per source hash; the bytes are cached beside the jars."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from support.flink_job import _locked, flink_home
from support.java_programs import compiled, java

PROGRAM = "kafka_standin"


def standin_bytes() -> dict[str, bytes]:
    """Every case the stand-ins write (`Main.java`), by name: ``split-*`` and ``file-split*`` (a
    SourceReaderState element) and ``enum-v*`` (the enumerator serializer's bytes)."""
    out = compiled(PROGRAM).with_name(compiled(PROGRAM).name + "-bytes")
    if not (out / "enum-v0.bin").exists():
        with _locked(flink_home()):
            if not (out / "enum-v0.bin").exists():
                with tempfile.TemporaryDirectory() as tmp:
                    java(PROGRAM, "kafkastandin.Main", str(Path(tmp) / "out"))
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.copytree(Path(tmp) / "out", out)
    return {f.stem: f.read_bytes() for f in sorted(out.glob("*.bin"))}
