"""Legacy Kafka consumer offsets moved by `bootstrap --base` are the offsets the real job
restores: a job keeping its offsets as `FlinkKafkaConsumer` does (`tests/legacy_offsets_job/`,
Flink 2.3, a union state of `Tuple2<TopicPartition, Long>` with the partition Kryo-serialized)
is savepointed; restored as it is, each subtask finds its partitions' offsets; restored after a
fix that moves every offset 1000 on (the job's classes given with --classes), it finds them
1000 further, and the partitions, written from rows, are the ones Flink wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli_runner import statectl as run
from support.java_programs import compiled, java

pytestmark = pytest.mark.slow  # three Flink runs and a Spark write

MAIN = "legacyoffsetsjob.Main"
WRITTEN = {0: 120, 1: 7, 2: 3_000_000_000, 3: 0}  # the job's OFFSETS, by partition
FIX = """
operators:
  - uid: legacy-offsets
    parallelism: 2
    operator_state:
      - name: topic-partition-offset-states
        kind: union
        column: value
        input: {sql: "SELECT struct(value.f0 AS f0, value.f1 + 1000 AS f1) AS value
                      FROM `legacy-offsets.topic-partition-offset-states`"}
"""


def restored(savepoint: Path, out: Path) -> dict[int, int]:
    out.mkdir()
    java("legacy_offsets_job", MAIN, "restore", str(savepoint), str(out))
    lines = (out / "restored.txt").read_text().splitlines()
    assert all(line.split()[0] == "payments.events" for line in lines)
    return {int(p): int(o) for _, p, o in (line.split() for line in lines)}


def test_restored_job_finds_the_moved_offsets(tmp_path):
    (tmp_path / "save").mkdir()
    java("legacy_offsets_job", MAIN, "save", str(tmp_path / "save"))
    base = Path((tmp_path / "save" / "savepoint.txt").read_text().removeprefix("file:"))
    (tmp_path / "fix.yaml").write_text(FIX)
    result = run("bootstrap", str(tmp_path / "fixed"), "--base", str(base), "--format", "flink", "--spec",
                 str(tmp_path / "fix.yaml"), "--classes", str(compiled("legacy_offsets_job")))
    assert result.returncode == 0, result.stderr
    assert restored(base, tmp_path / "as-saved") == WRITTEN
    assert restored(tmp_path / "fixed", tmp_path / "moved") == {p: o + 1000 for p, o in WRITTEN.items()}
