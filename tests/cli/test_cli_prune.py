"""`statectl prune` from the command line: bad input is one exact `error:` line, the base is never
changed and nothing is left behind; the terminal report."""

from __future__ import annotations

import pytest

from support.cli_runner import statectl
from support.savepoint_rows import tree_digest
from support.untrusted_helpers import assert_one_error_line


@pytest.fixture(scope="module")
def base(flink_savepoint):
    """The suite's Flink 2.3 job: proc holds the TTL states ttl_seen (map) and ttl_last (value)."""
    return flink_savepoint("2.3.0", backend="hashmap", format="canonical").path


BEFORE_SPARK = [
    ([], "give either --expired-at TIME (with --ttl) or --where CONDITION"),
    (["--expired-at", "5", "--where", "key = 1", "--ttl", "1d"],
     "give either --expired-at TIME (with --ttl) or --where CONDITION"),
    (["--where", "key = 1", "--ttl", "1d"], "--ttl goes with --expired-at, not with --where"),
    (["--expired-at", "5"], "operator proc, state 'ttl_seen' has a TTL, which a savepoint does not record: "
                            "give it with --ttl ttl_seen=DURATION (or --ttl DURATION for every TTL state)"),
    (["--expired-at", "5", "--ttl", "ttl_seen=1d"], "operator proc, state 'ttl_last' has a TTL"),
    (["--expired-at", "5", "--ttl", "1d", "--ttl", "seen=2d"],
     "--ttl seen=...: no TTL state 'seen' to prune; TTL states: ttl_last, ttl_seen"),
    (["--expired-at", "yesterday", "--ttl", "1d"],
     "--expired-at 'yesterday': give epoch milliseconds or an ISO 8601 time (2026-11-27T10:00:00Z)"),
    (["--expired-at", "5", "--ttl", "forever"],
     "--ttl 'forever': give a duration such as 7d, 12h, 30min, 45s, 500ms or P7D"),
    (["--expired-at", "5", "--ttl", "1d", "--uid", "win"], "operator win has no TTL state to prune"),
    (["--where", "true", "--uid", "src"], "operator src has no keyed state to prune"),
]


@pytest.mark.parametrize("args, message", BEFORE_SPARK)
def test_bad_input_is_one_line(base, tmp_path, args, message):
    before = tree_digest(base)
    line = assert_one_error_line(statectl("prune", str(base), str(tmp_path / "out"), *args))
    assert line == f"error: {message}" or line.startswith(f"error: {message}")
    assert not (tmp_path / "out").exists()
    assert tree_digest(base) == before


def test_a_condition_spark_cannot_resolve(base, tmp_path):
    before = tree_digest(base)
    line = assert_one_error_line(statectl("prune", str(base), str(tmp_path / "out"), "--where", "nope = 1"))
    assert line.startswith("error: --where 'nope = 1': ") and "nope" in line[len("error: --where 'nope = 1': "):]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert tree_digest(base) == before


def test_an_existing_output_needs_overwrite(base, tmp_path):
    out = tmp_path / "out"
    assert statectl("prune", str(base), str(out), "--where", "key = 1", "--uid", "proc").returncode == 0
    again = statectl("prune", str(base), str(out), "--where", "key = 2", "--uid", "proc")
    assert_one_error_line(again, "--overwrite")
    result = statectl("prune", str(base), str(out), "--where", "key = 2", "--uid", "proc", "--overwrite")
    assert result.returncode == 0, result.stderr


def test_the_terminal_report(base, tmp_path):
    result = statectl("prune", str(base), str(tmp_path / "out"), "--expired-at", "0", "--ttl", "1d")
    assert result.returncode == 0, result.stderr
    assert "Pruned" in result.stdout and "(keyed rows)" in result.stdout and "ttl_seen" in result.stdout
    assert "pruned" in result.stdout and "shallow copy" in result.stdout
