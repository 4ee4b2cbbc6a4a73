"""Every dev fixture through the CLI: `statectl sql` gives every table of the savepoint
exactly as expected.json (one query per fixture, every view as JSON), and `statectl read`
gives the -proc keyed table and, in turn across the fixtures, each other kind of table."""

from __future__ import annotations

import json

import pytest

from tests.conftest import statectl
from tests.flink_expect import (FIXTURE_NAMES, FIXTURES, check_broadcast, check_keyed, check_list_state,
                                check_timers, expected_of, key_names_of)

# the tables `read` takes in turn, after the -proc keyed table: (role, read options)
OTHER_TABLES = [("proc", ["--timers"]), ("win", []), ("win", ["--timers"]), ("bcast", []),
                ("union-op", []), ("src", [])]


def _views(expected: dict) -> list[tuple[str, str]]:
    """(view, kind) of every table of the fixture's operators."""
    out = []
    for uid, exp in expected["operators"].items():
        if "keyed_state" in exp:
            out += [(uid, "keyed"), (f"{uid}.timers", "timers")]
        for name in list(exp.get("operator_state", {})) + list(exp.get("broadcast_state", {})):
            out.append((f"{uid}.{name}", "operator"))
    return out


def _check_table(expected: dict, view: str, kind: str, rows: list[dict]) -> None:
    uid, _, state = view.partition(".")
    exp = expected["operators"][uid]
    if kind == "keyed":
        columns = set().union(*(r.keys() for r in rows)) if rows else set()
        states = {c for c in columns if c in exp["keyed_state"] or c.endswith("_ttl_ts")}
        names = key_names_of(sorted(columns), states)
        assert check_keyed(expected, uid, rows, names, columns) > 0
    elif kind == "timers":
        if "timers" in exp:
            check_timers(expected, uid, rows, key_names_of(rows[0].keys() if rows else ["key"]))
        else:
            assert rows == []
    elif state in exp.get("broadcast_state", {}):
        check_broadcast(exp["broadcast_state"][state], rows)
    else:
        check_list_state(exp["operator_state"][state], rows, by_subtask=False)


def _json_lines(result) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_sql_reads_every_table(name):
    expected = expected_of(name)
    views = _views(expected)
    query = " UNION ALL ".join(
        f"SELECT '{view}' AS view, to_json(struct(*), map('ignoreNullFields', 'false')) AS row FROM `{view}`" for view, _ in views)
    lines = _json_lines(statectl("sql", str(FIXTURES / name / "savepoint"), query, "-f", "jsonl"))
    by_view: dict[str, list[dict]] = {view: [] for view, _ in views}
    for line in lines:
        by_view[line["view"]].append(json.loads(line["row"]))
    for view, kind in views:
        _check_table(expected, view, kind, by_view[view])


@pytest.mark.parametrize("index,name", list(enumerate(FIXTURE_NAMES)))
def test_read_tables(index, name):
    expected = expected_of(name)
    prefix = next(uid for uid in expected["operators"] if uid.endswith("-proc"))[:-len("proc")]
    role, options = OTHER_TABLES[index % len(OTHER_TABLES)]
    uid = prefix + role
    exp = expected["operators"][uid]
    if options:
        view, kind = f"{uid}.timers", "timers"
    elif "keyed_state" in exp:
        view, kind = uid, "keyed"
    else:
        state = next(iter(list(exp.get("operator_state", {})) + list(exp.get("broadcast_state", {}))))
        view, kind = f"{uid}.{state}", "operator"
    savepoint = str(FIXTURES / name / "savepoint")
    for u, opts, v, k in [(prefix + "proc", [], prefix + "proc", "keyed"), (uid, options, view, kind)]:
        rows = _json_lines(statectl("read", savepoint, "--uid", u, *opts, "-f", "jsonl"))
        _check_table(expected, v, k, rows)
