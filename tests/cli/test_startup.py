"""Start-up: `--version` and `info SAVEPOINT [--json]` are answered by the entry point without
building the typer app, with the app's output, exit codes and errors (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.builders import build_full_savepoint
from support.cli_runner import statectl, statectl_process

OWN_PROCESS = {**os.environ, "STATECTL_HANDOFF": "off"}  # the probes look at what this process imports


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
from pathlib import Path
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
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=OWN_PROCESS)
    assert done.stderr.splitlines()[-1] == "[]"
    if "--json" in args:
        assert json.loads(done.stdout)["location"] == savepoint.location


NATIVE = Path(__file__).resolve().parents[1] / "fixtures" / "flink-dev" / "long-rocksdb-native" / "savepoint"

LOCAL_READ = PROBE.replace('"numba", "pandas")', '"numba", "pandas", "scipy")').replace(
    "from statectl.cli.main import run\n",  # its few blocks walked by the compiled walks, whose numba imports SciPy
    "from statectl.cli.main import run\nfrom statectl.statefmt import jit\njit.PLAIN_BUDGET = 0\n")


def test_a_local_read_decodes_without_pandas_or_scipy():
    """pyarrow would import pandas and numba SciPy (0.3-0.4 s together) for nothing a local read does."""
    done = subprocess.run([sys.executable, "-c", LOCAL_READ, "read", str(NATIVE), "--uid", "lk-proc",
                           "--format", "jsonl", "--limit", "3"], capture_output=True, text=True, env=OWN_PROCESS)
    assert done.stderr.splitlines()[-1] == "['numba', 'rich', 'typer']"
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 3 and all("key" in row for row in rows)


SPARK_AFTER_A_LOCAL_READ = """
import sys
from pathlib import Path
sys.argv = ["statectl", "read", sys.argv[1], "--uid", "lk-proc", "--limit", "1"]
from statectl.cli.main import run
try:
    run()
except SystemExit:
    pass
import pyarrow as pa
import pyspark  # lifts the refusal
import pandas as pd
categories = pa.array(pd.Series(["a", "b", "a"], dtype="category"))
try:
    import IPython  # PySpark would import it to word errors for notebooks: never in a command
    shell = "IPython imported"
except ModuleNotFoundError:
    shell = "no IPython"
print(categories.type, "scipy" in sys.modules or __import__("scipy.linalg") is not None, shell, file=sys.stderr)
"""


def test_spark_brings_pandas_back_as_pyarrow_knows_it():
    """After the first import of pyspark, pandas imports and pyarrow converts pandas objects as
    pandas objects (a category Series to a dictionary array), although it found no pandas before;
    IPython stays out."""
    done = subprocess.run([sys.executable, "-c", SPARK_AFTER_A_LOCAL_READ, str(NATIVE)],
                          capture_output=True, text=True, env=OWN_PROCESS)
    assert done.stderr.splitlines()[-1] == "dictionary<values=string, indices=int8, ordered=0> True no IPython"
