"""The suite's in-process `statectl` runner prints what the console script prints, and leaves
the test process (and its Spark session) as it found it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from support.cli_runner import statectl, statectl_in_process, statectl_process
from support.readers_savepoints import build_base
from statectl import __version__
from statectl.cli.options import OPTIONS


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return build_base(tmp_path_factory.mktemp("runner") / "sp")


def test_in_process_runs_print_exactly_what_the_console_script_prints(saved, tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "_metadata").write_text("{")
    runs = [
        ("--help",),                            # usage text, exit 0
        ("info",),                              # a usage error: exit 2, usage on stderr
        ("info", saved.location),               # rich tables
        ("validate", saved.location, "--json"),
        ("info", str(damaged)),                 # a StatectlError: one line, exit 1
    ]
    for args in runs:
        process, in_process = statectl_process(*args), statectl_in_process(*args)
        assert (in_process.returncode, in_process.stdout, in_process.stderr) == \
            (process.returncode, process.stdout, process.stderr), args
        if args == ("--help",):
            assert process.stdout.splitlines()[0] == "Usage: statectl [OPTIONS] COMMAND [ARGS]..."
        if args == ("info",):
            assert process.returncode == 2
            assert process.stderr == "error: Missing argument 'savepoint'. (see statectl info --help)\n"


def test_a_spark_command_in_process_leaves_the_process_as_it_found_it(spark, saved, tmp_path):
    def state():
        return {
            "sigint": signal.getsignal(signal.SIGINT),
            "excepthook": sys.excepthook,
            "cwd": os.getcwd(),
            "streams": (sys.stdout, sys.stderr),
            "fds": [(s.st_dev, s.st_ino) for s in map(os.fstat, (1, 2))],
            "env": dict(os.environ),
            "options": dict(OPTIONS),
            "conf": spark.conf.getAll,
        }

    before = state()
    assert before["conf"]["spark.sql.shuffle.partitions"] == "4"  # the CLI's own default is 8
    result = statectl("read", saved.location, "--uid", "src", "--state", "partitions",
                      "--format", "jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len([json.loads(line) for line in result.stdout.splitlines()]) == 4
    assert statectl("--debug", "info", str(tmp_path)).returncode == 1  # sets the global option
    assert state() == before
    assert spark.range(3).count() == 3  # the suite's session still runs


def test_an_env_naming_what_spark_reads_runs_a_process(tmp_path):
    """The driver's variables reach no running JVM or worker: such a run needs a process."""
    shadow = tmp_path / "shadow" / "statectl"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the process saw PYTHONPATH')\n")
    result = statectl("--version", env={"PYTHONPATH": str(shadow.parent)})
    assert result.returncode == 1 and "the process saw PYTHONPATH" in result.stderr
    assert statectl("--version", env={"STATECTL_UNUSED": "1"}).stdout == f"statectl {__version__}\n"
    assert "STATECTL_UNUSED" not in os.environ


@pytest.mark.slow
def test_a_run_past_its_timeout_raises_as_subprocess_run_does(spark, tmp_path):
    (tmp_path / "fns.py").write_text("import time\n\ndef slow(key, rows, ctx):\n"
                                     "    time.sleep(300)\n")
    (tmp_path / "keys.csv").write_text("user\nu0\n")
    (tmp_path / "spec.yaml").write_text(
        "operators:\n  - uid: p\n    parallelism: 1\n    keyed:\n      key: user\n"
        "      input: keys.csv\n      function: fns.py:slow\n"
        "      states: [{name: n, kind: value, type: int64}]\n")
    with pytest.raises(subprocess.TimeoutExpired):
        statectl("bootstrap", "--spec", str(tmp_path / "spec.yaml"), str(tmp_path / "out"),
                 timeout=3)
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []  # the run's job is gone
    assert spark.range(3).count() == 3
