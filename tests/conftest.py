"""Fixtures shared by the suite: one Spark session for all tests, and the CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark():
    """The suite's one local Spark session (small: tests use small data)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("statectl-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def statectl(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 600,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the installed `statectl` console script as a user would."""
    full_env = dict(os.environ, COLUMNS="200", **(env or {}))
    return subprocess.run(
        ["statectl", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
        env=full_env,
    )


@pytest.fixture
def cli():
    return statectl


@pytest.fixture(scope="session")
def flink_savepoint():
    """Factory for snapshots made by the suite's Flink job (tests/flink/), cached between runs:
    ``flink_savepoint(version="2.3.0", backend="rocksdb", format="canonical", key_type="long", ...)``
    returns a ``flink_job.Snapshot`` (path, expected.json). Knobs: ``flink_job.DEFAULTS``.
    Missing javac or Flink jars fail the test with the command that installs them."""
    import flink_job

    def make(version: str = "2.3.0", **knobs):
        try:
            return flink_job.make_snapshot(version, **knobs)
        except flink_job.FlinkSetupError as e:
            pytest.fail(str(e), pytrace=False)

    return make


@pytest.fixture(scope="session")
def flink_snapshots():
    """Like flink_savepoint, for several knob sets of one version made in one JVM:
    ``flink_snapshots("1.20.3", [dict(backend="hashmap"), dict(format="native")])``."""
    import flink_job

    def make(version: str, specs: list[dict]):
        try:
            return flink_job.make_snapshots(version, specs)
        except flink_job.FlinkSetupError as e:
            pytest.fail(str(e), pytrace=False)

    return make
