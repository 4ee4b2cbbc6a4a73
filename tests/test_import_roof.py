"""statectl installs under one import name: folders named like its packages shadow nothing.

The top-level folders `cli/`, `statefmt/`, `backends/`, `readers/` and `writers/` install as
`statectl.cli`, ... A user's working directory holding folders of those names
(another checkout, another distribution) must not be imported in their place,
by the command or by Spark's Python workers (tested in test_rescale), on every
supported Python, without relying on PYTHONSAFEPATH (Python 3.11+ only).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

PACKAGES = ("cli", "statefmt", "backends", "readers", "writers")

PROBE = (
    "import importlib.util, json, sys; "
    "import statectl, statectl.cli; "
    "print(json.dumps({'version': sys.version_info[:2], 'root': statectl.__file__, "
    "'packages': {p: importlib.util.find_spec('statectl.' + p).origin for p in %r}, "
    "'top_level': [p for p in %r if p in sys.modules]}))" % (PACKAGES, PACKAGES)
)


def _shadowing_folder(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    for name in PACKAGES:
        (cwd / name).mkdir(parents=True)
        (cwd / name / "__init__.py").write_text("raise ImportError('shadowed')\n")
    return cwd


def _probe(python: str, cwd: Path, env: dict | None = None) -> dict:
    result = subprocess.run([python, "-c", PROBE], cwd=cwd, capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _assert_installed(found: dict, root: Path) -> None:
    assert Path(found["root"]).parent == root
    for name, origin in found["packages"].items():
        assert Path(origin) == root / name / "__init__.py"
    assert found["top_level"] == []  # nothing was imported under a bare top-level name


def _python310() -> str:
    """A real Python 3.10 interpreter: $STATECTL_PYTHON310, else pyenv's, else on PATH."""
    candidates = [os.environ.get("STATECTL_PYTHON310", "")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10")))
    candidates.append(shutil.which("python3.10") or "")
    for python in filter(None, candidates):
        probe = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                               capture_output=True, text=True)
        if probe.stdout.strip() == "True":
            return python
    pytest.fail("Python 3.10 is needed for this test (.ci/run provides it)")


def test_the_editable_install_resolves_statectl_from_the_repository(tmp_path):
    found = _probe(sys.executable, _shadowing_folder(tmp_path))
    _assert_installed(found, REPO)


@pytest.mark.slow
def test_a_normal_install_on_python_3_10_shadows_nothing(tmp_path):
    python310 = _python310()
    target = tmp_path / "site"
    install = subprocess.run(
        [python310, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(REPO)],
        capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    found = _probe(python310, _shadowing_folder(tmp_path), env={"PYTHONPATH": str(target)})
    assert found["version"] == [3, 10]
    _assert_installed(found, target / "statectl")


@pytest.mark.parametrize("name", ["__version__", "StatectlError", "open_savepoint",
                                  "SavepointWriter", "rescale", "diff_savepoints"])
def test_the_public_api_is_exported_from_statectl(name):
    import statectl

    assert name in statectl.__all__
    assert getattr(statectl, name) is not None
