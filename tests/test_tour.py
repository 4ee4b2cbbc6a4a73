"""The README's set-up line and its tour run as written, from a fresh directory."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from conftest import REPO, statectl


def readme_commands() -> list[list[str]]:
    """Every statectl command of the README's set-up line and of its tour, in order."""
    text = (REPO / "README.md").read_text()
    setup = re.search(r"```bash\n(pip install -e \. && statectl .*)\n```", text).group(1)
    tour = re.search(r"## A short tour\n\n```bash\n(.*?)```", text, re.S).group(1)
    commands = [part.strip() for part in setup.split("&&") if part.strip().startswith("statectl")]
    commands += [line for line in tour.splitlines() if line.startswith("statectl")]
    return [shlex.split(c)[1:] for c in commands]


def test_the_tour_names_the_shipped_examples():
    commands = readme_commands()
    assert len(commands) >= 15
    specs = [c[c.index("--spec") + 1] for c in commands if "--spec" in c]
    assert specs and all((REPO / s).is_file() for s in specs)


@pytest.mark.slow
def test_every_tour_command_runs_as_written(tmp_path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    commands = readme_commands()
    for args in [commands[0], *commands]:  # the main command runs a second time as written too
        result = statectl(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        assert "error" not in result.stderr.lower(), (args, result.stderr)
    v3 = json.loads(statectl("info", "out/v3", "--json", cwd=tmp_path).stdout)
    assert sorted(op["uid"] for op in v3["operators"]) == ["bcast", "processor", "spend", "src"]
    standalone = statectl("validate", "out/v3-standalone", "--json", cwd=tmp_path)
    report = json.loads(standalone.stdout)
    assert report["valid"] and report["dependencies"] == []
    assert (tmp_path / "counts").is_dir()
