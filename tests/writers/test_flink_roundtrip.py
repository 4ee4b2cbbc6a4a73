"""Every dev fixture (tests/fixtures/flink-dev, canonical and native, both backends) read with
statectl, written back with `statectl bootstrap --format flink` from those tables
(tests/support/flink_rewrite.py), restores in Flink 2.3 into both backends with exactly its state: the
job-shaped check and the declared-mode dump of every key, TTL timestamps within the write's
wall-clock window (the writer writes current ones). All restores run in one JVM."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from support.cli_runner import statectl
from support.flink_rewrite import spec_from_flink_savepoint

sys.path.insert(0, str(Path(__file__).parents[1]))
from support import flink_job  # noqa: E402

pytestmark = pytest.mark.slow  # real Flink restores

FIXTURES = sorted(p.name for p in flink_job.FIXTURES.iterdir() if (p / "savepoint").is_dir())


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory):
    """({fixture: the savepoint bootstrap wrote from its tables}, (lo, hi) wall-clock ms of the writes)."""
    out = {}
    lo = int(time.time() * 1000)
    for name in FIXTURES:
        folder = tmp_path_factory.mktemp(name)
        spec = spec_from_flink_savepoint(spark, flink_job.FIXTURES / name / "savepoint", folder / "input")
        result = statectl("bootstrap", "--spec", str(spec), "--format", "flink", str(folder / "savepoint"))
        assert result.returncode == 0, (name, result.stderr)
        out[name] = folder / "savepoint"
    return out, (lo, int(time.time() * 1000))


def test_all_seven_dev_fixtures_are_covered():
    assert FIXTURES == ["int-hashmap-native", "long-hashmap-canonical", "long-rocksdb-canonical",
                        "long-rocksdb-native", "pojo-hashmap-canonical", "pojo-rocksdb-canonical",
                        "tuple-rocksdb-native"]


def test_every_dev_fixture_written_back_restores_in_flink_into_both_backends(written):
    """Written back from its tables, each fixture restores with its state; its TTL timestamps
    are the fixture's own (the tables carry them), within the bounds its expected.json gives."""
    savepoints, _ = written
    items = [(name, savepoints[name], backend) for name in FIXTURES for backend in ("hashmap", "rocksdb")]
    problems = flink_job.restore_fixture_shapes(items)
    assert {f"{name} {backend}": p for (name, _, backend), p in zip(items, problems) if p} == {}
