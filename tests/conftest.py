"""Fixtures shared by the suite: one Spark session for all tests, and the CLI runners.

The test files sit in folders named like the package's (statefmt/, statefmt/flink/, backends/,
readers/, writers/, cli/), flink_job/ holds the tests of the suite's real-Flink harness, and the
package-wide ones stay here. What tests share (the Flink job's driver, the CLI runners, builders
of savepoints, ...) is the package support/: this folder is on sys.path (pytest puts a rootdir
conftest's folder there), so every test imports it as `support` (`from support import flink_job`).
No test module imports another. Test folders have no __init__.py; test file basenames are unique.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from support import temp_folders
from support.cli_runner import statectl, statectl_in_process, statectl_process  # noqa: F401 (for tests)
from support.spark_session import running_spark, stop_suite_spark, suite_spark

SUITE_TMP = temp_folders.use_own_tempdir()  # before any test, Spark or subprocess starts
# the warm engine a statectl process of the suite starts (cli/engine.py) is the suite's own,
# idle-stopped soon, and stopped at the end (pytest_sessionfinish)
os.environ.setdefault("STATECTL_ENGINE_DIR", os.path.join(SUITE_TMP, "engine"))
os.environ.setdefault("STATECTL_ENGINE_IDLE", "120")

# Hypothesis's per-example deadline (200 ms by default) is a wall-clock check: on a machine shared
# with other work (or by xdist workers and their JVMs) an example of a correct test can take longer,
# and the first example of many tests loads compiled kernels. The suite runs without it; a test
# that wants a time limit asserts one itself. Loaded here, before any test module makes its
# `settings(...)`, so every `@given` in the suite inherits it.
settings.register_profile("statectl", deadline=None)
settings.load_profile("statectl")


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per core, at most four and one per 6 GiB of
    memory. Each worker is a pytest process of its own with its own Spark session and its own
    TMPDIR, and starts Flink JVMs of its own; files are its unit (``--dist loadfile``), so a
    module's fixtures are made once. ``-n 0`` runs the suite in this one process."""
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return max(1, min(os.cpu_count() or 1, 4, int(memory_gib // 6)))


def pytest_collection_modifyitems(items):
    """Files marked slow as a whole (a cluster, a server, Flink runs) first, the cluster's (the
    longest) before them, each file's tests in their order: a worker that draws one of them late
    would run alone at the end, while the fast files at the end even the workers out. xdist keeps
    this order (``--no-loadscope-reorder`` in pyproject's addopts; its default would put the
    files with the most tests first)."""
    def file_marks(item) -> set[str]:
        marks = getattr(item.module, "pytestmark", [])
        return {m.name for m in (marks if isinstance(marks, list) else [marks])}
    def order(item) -> tuple[bool, bool]:
        marks = file_marks(item)
        return "cluster" not in marks, "slow" not in marks
    items.sort(key=order)


@pytest.fixture(scope="session")
def spark():
    """The suite's one local Spark session (see spark_session.suite_spark)."""
    return suite_spark()


LEFT_BY_WORKERS = pytest.StashKey[list]()


def pytest_sessionfinish(session, exitstatus):
    """Stop the suite's Spark; fail the run if statectl left a temporary folder behind (in the
    suite's TMPDIR, or in the scratch space of the suite's Spark executor). An xdist worker
    hands what it found to the controller (a worker's exit status does not fail the run)."""
    _stop_warm_engine()
    scratch = temp_folders.suite_scratch_dirs(running_spark())
    left = temp_folders.statectl_entries(SUITE_TMP, *scratch)
    stop_suite_spark()  # started by the `spark` fixture or by an in-process `statectl` run
    temp_folders.remove(SUITE_TMP)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["statectl_left"] = left
        return
    left += session.config.stash.get(LEFT_BY_WORKERS, [])
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"statectl left {len(left)} temporary folder(s): " + ", ".join(left)
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _stop_warm_engine() -> None:
    from statectl.cli import engine

    folder = os.environ["STATECTL_ENGINE_DIR"]
    record = engine.live_record(folder) if os.path.isdir(folder) else None
    if record is not None:
        engine.stop(folder, record)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """(xdist, in the controller) What a finished worker found left behind."""
    left = getattr(node, "workeroutput", {}).get("statectl_left", [])
    node.config.stash.setdefault(LEFT_BY_WORKERS, []).extend(left)


@pytest.fixture(scope="session")
def spark_cluster():
    """A Spark standalone cluster on loopback (a master, two one-core workers) for the tests
    marked ``cluster``, started once and stopped at the end (see spark_cluster.SparkCluster)."""
    from support.spark_cluster import SparkCluster

    cluster = SparkCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def cli():
    return statectl


@pytest.fixture(scope="session")
def flink_savepoint():
    """Factory for snapshots made by the suite's Flink job (tests/flink/), cached between runs:
    ``flink_savepoint(version="2.3.0", backend="rocksdb", format="canonical", key_type="long", ...)``
    returns a ``flink_job.Snapshot`` (path, expected.json). Knobs: ``flink_job.DEFAULTS``.
    Missing javac or Flink jars fail the test with the command that installs them."""
    from support import flink_job

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
    from support import flink_job

    def make(version: str, specs: list[dict]):
        try:
            return flink_job.make_snapshots(version, specs)
        except flink_job.FlinkSetupError as e:
            pytest.fail(str(e), pytrace=False)

    return make
