"""Every dev fixture through the CLI: `statectl sql` gives every table of the savepoint
exactly as expected.json (one query per fixture, every view as JSON), and `statectl read`
gives the -proc keyed table and, in turn across the fixtures, each other kind of table."""

from __future__ import annotations

import json

import pytest

from support.cli_runner import statectl
from support.flink_expect import FIXTURE_NAMES, FIXTURES, check_table, expected_of, union_query, views_of

# the tables `read` takes in turn, after the -proc keyed table: (role, read options)
OTHER_TABLES = [("proc", ["--timers"]), ("win", []), ("win", ["--timers"]), ("bcast", []),
                ("union-op", []), ("src", [])]


def _json_lines(result) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line]


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_sql_reads_every_table(name):
    expected = expected_of(name)
    views = views_of(expected)
    lines = _json_lines(statectl("sql", str(FIXTURES / name / "savepoint"), union_query(views), "-f", "jsonl"))
    by_view: dict[str, list[dict]] = {view: [] for view, *_ in views}
    for line in lines:
        by_view[line["view"]].append(json.loads(line["row"]))
    for view, uid, kind, state in views:
        check_table(expected, uid, kind, state, by_view[view])


@pytest.mark.parametrize("index,name", list(enumerate(FIXTURE_NAMES)))
def test_read_tables(index, name):
    expected = expected_of(name)
    prefix = next(uid for uid in expected["operators"] if uid.endswith("-proc"))[:-len("proc")]
    role, options = OTHER_TABLES[index % len(OTHER_TABLES)]
    uid = prefix + role
    exp = expected["operators"][uid]
    if options:
        kind, state = "timers", ""
    elif "keyed_state" in exp:
        kind, state = "keyed", ""
    else:
        kind, state = "operator", next(iter(list(exp.get("operator_state", {})) + list(exp.get("broadcast_state", {}))))
    savepoint = str(FIXTURES / name / "savepoint")
    for u, opts, k, s in [(prefix + "proc", [], "keyed", ""), (uid, options, kind, state)]:
        rows = _json_lines(statectl("read", savepoint, "--uid", u, *opts, "-f", "jsonl"))
        check_table(expected, u, k, s, rows)
