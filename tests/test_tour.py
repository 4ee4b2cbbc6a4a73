"""The README's set-up line and its tour run as written, from a fresh directory."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import yaml

from support import REPO

from support.cli_runner import statectl

SQL_EXAMPLE = "examples/flink-sql/savepoint"
GROUP_AGG, GROUP_AGG_ID = "GroupAggregate[4]", "212e7b15b7b0440bdd18c1658047cbf7"


def readme_commands() -> list[list[str]]:
    """Every statectl command of the README's set-up line and of its tour, in order."""
    text = (REPO / "README.md").read_text()
    setup = re.search(r"```bash\n(pip install -e \. && statectl .*)\n```", text).group(1)
    tour = re.search(r"## A short tour\n\n```bash\n(.*?)```", text, re.S).group(1)
    commands = [part.strip() for part in setup.split("&&") if part.strip().startswith("statectl")]
    commands += [line for line in tour.splitlines() if line.startswith("statectl")]
    return [shlex.split(c)[1:] for c in commands]


def accumulators(savepoint: str, *operator: str, cwd=REPO) -> dict[int, dict]:
    """The GROUP BY's accState per key (f0: COUNT(*), f1: SUM(v), ...) of a SQL-job savepoint."""
    result = statectl("read", savepoint, *operator, "--state", "accState", "--format", "jsonl", cwd=cwd)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return {row["f0"]: row["accState"] for row in rows}


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
    before = accumulators(SQL_EXAMPLE, "--name", GROUP_AGG)
    after = accumulators("out/flink-sql-fixed", "--operator-id", GROUP_AGG_ID, cwd=tmp_path)
    assert {k: {**acc, "f1": acc["f1"] - (1000 if k % 2 == 0 else 0)} for k, acc in before.items()} == after


def test_the_sql_fix_in_flink_md_is_the_shipped_spec():
    """docs/FLINK.md's worked example of a SQL fix shows examples/fix-flink-sql.yaml as it is."""
    text = (REPO / "docs" / "FLINK.md").read_text()
    section = text[text.index("### Fixing a SQL job's state"):text.index("### Rescaling a SQL job")]
    shown = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert "examples/fix-flink-sql.yaml" in shown
    assert yaml.safe_load(shown) == yaml.safe_load((REPO / "examples" / "fix-flink-sql.yaml").read_text())
    assert f"--base {SQL_EXAMPLE} --format flink --spec examples/fix-flink-sql.yaml" in section


def test_the_shipped_sql_savepoint_holds_what_the_docs_say():
    """Its GROUP BY is GroupAggregate[4] under the id the spec names, the spec gives every state of
    it, and SUM(v) of key 10 is the 30421 docs/FLINK.md quotes."""
    info = json.loads(statectl("info", SQL_EXAMPLE, "--json", cwd=REPO).stdout)
    (op,) = [o for o in info["operators"] if o["name"] == GROUP_AGG]
    assert op["operator_id"] == GROUP_AGG_ID and op["uid"] is None
    (spec_op,) = yaml.safe_load((REPO / "examples" / "fix-flink-sql.yaml").read_text())["operators"]
    assert spec_op["operator_id"] == GROUP_AGG_ID and spec_op["parallelism"] == op["parallelism"]
    assert sorted(s["name"] for s in op["states"]) == sorted(s["name"] for s in spec_op["keyed"]["states"])
    acc = accumulators(SQL_EXAMPLE, "--name", GROUP_AGG)
    assert sorted(acc) == [3, 10, 17, 24, 31, 38, 45, 52] and acc[10]["f1"] == 30421
    assert sum(f.stat().st_size for f in (REPO / SQL_EXAMPLE).iterdir()) < 500_000
