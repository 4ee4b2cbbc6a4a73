"""Spec inputs `{sql: ...}` over a base in statectl's own format: read, fix and write back in one
`bootstrap --base` (the Flink side, with real Flink restores, is tests/writers/test_flink_base.py)."""

from __future__ import annotations

import json

import pytest

from support import REPO

from support.cli_runner import statectl
from support.savepoint_rows import digest

FIX = """
operators:
  - uid: proc
    parallelism: 2
    keyed:
      key: [user]
      input: {sql: "SELECT `user`, IF(count > 10, count + 1, count) AS count FROM proc"}
      states: [{name: count, kind: value, column: count}]
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    work = tmp_path_factory.mktemp("sql-inputs")
    result = statectl("bootstrap", "--spec", str(REPO / "examples" / "spec.yaml"), str(work / "base"))
    assert result.returncode == 0, result.stderr
    return work


def _counts(savepoint) -> dict:
    result = statectl("sql", str(savepoint), "SELECT `user`, count FROM proc", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    return {r["user"]: r["count"] for r in map(json.loads, result.stdout.splitlines())}


def test_a_sql_fix_of_the_base_is_written_and_the_rest_shallow_copies(base):
    before = digest(base / "base")
    (base / "fix.yaml").write_text(FIX)
    result = statectl("bootstrap", str(base / "fixed"), "--base", str(base / "base"), "--spec",
                      str(base / "fix.yaml"), "--json")
    assert result.returncode == 0, result.stderr
    actions = {op["uid"]: op["action"] for op in json.loads(result.stdout)["operators"]}
    assert actions == {"proc": "written", "src": "shallow copy", "union-op": "shallow copy",
                       "bcast": "shallow copy"}
    old, new = _counts(base / "base"), _counts(base / "fixed")
    assert old and any(c > 10 for c in old.values()) and any(c <= 10 for c in old.values() if c is not None)
    assert new == {u: (c + 1 if c > 10 else c) for u, c in old.items() if c is not None}
    assert digest(base / "base") == before


def test_an_sql_input_without_a_base_is_one_spec_line(base):
    (base / "fix.yaml").write_text(FIX)
    result = statectl("bootstrap", str(base / "nobase"), "--spec", str(base / "fix.yaml"))
    assert (result.returncode, result.stderr.strip().splitlines()) == (1, [
        "error: operator 'proc'.keyed.input: an sql input is a query over the base savepoint's tables; "
        "give the base with --base"])
    assert not (base / "nobase").exists()
