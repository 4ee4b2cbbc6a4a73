"""Start-up: `--version` and `info SAVEPOINT [--json]` are answered by the entry point without
building the typer app, with the app's output, exit codes and errors (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.builders import build_full_savepoint
from support.cli_runner import statectl, statectl_process


@pytest.fixture
def savepoint(tmp_path):
    return build_full_savepoint(tmp_path / "sp")


@pytest.mark.parametrize("args", [["info", "SP"], ["info", "SP", "--json"], ["info", "--json", "SP"]])
def test_info_prints_what_the_app_prints(savepoint, args):
    args = [savepoint.location if a == "SP" else a for a in args]
    fast = statectl_process(*args)
    app = statectl_process("--debug", *args)  # another option: the typer app parses the line
    assert (fast.returncode, fast.stdout, fast.stderr) == (app.returncode, app.stdout, app.stderr)
    assert fast.returncode == 0 and fast.stdout


def test_info_of_no_savepoint_is_the_apps_one_line(tmp_path):
    missing = str(tmp_path / "nope")
    fast = statectl("info", missing)
    app = statectl_process("--s3-endpoint", "http://127.0.0.1:1", "info", missing)
    assert (fast.returncode, fast.stdout, fast.stderr) == (1, "", f"error: {missing}: no such savepoint directory\n")
    assert (app.returncode, app.stdout, app.stderr) == (fast.returncode, fast.stdout, fast.stderr)


def test_version_and_other_lines_of_info(savepoint):
    from statectl import __version__

    assert statectl("--version").stdout == f"statectl {__version__}\n"
    bad = statectl("info", savepoint.location, "--jsn")  # not the fast path's: the app's usage error
    assert bad.returncode == 2 and bad.stderr.startswith("error: No such option: --jsn")
    assert statectl("info", "--help").stdout.startswith("Usage: statectl info")


PROBE = """
import sys
sys.argv = ["statectl", *sys.argv[1:]]
from statectl.cli.main import run
try:
    run()
except SystemExit:
    pass
heavy = ("typer", "click", "pydantic", "rich", "pyspark", "numba", "pandas")
print(sorted({m.split(".")[0] for m in sys.modules} & set(heavy)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--version"], ["info", "SP", "--json"]])
def test_version_and_info_json_import_no_cli_framework_nor_spark(savepoint, args):
    args = [savepoint.location if a == "SP" else a for a in args]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True)
    assert done.stderr.splitlines()[-1] == "[]"
    if "--json" in args:
        assert json.loads(done.stdout)["location"] == savepoint.location
