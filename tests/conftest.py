"""Fixtures shared by the suite: one Spark session for all tests, and the CLI runners."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import statectl, statectl_in_process, statectl_process  # noqa: F401 (for tests)
from spark_session import stop_suite_spark, suite_spark

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark():
    """The suite's one local Spark session (see spark_session.suite_spark)."""
    return suite_spark()


def pytest_sessionfinish(session, exitstatus):
    stop_suite_spark()  # started by the `spark` fixture or by an in-process `statectl` run


@pytest.fixture
def cli():
    return statectl
