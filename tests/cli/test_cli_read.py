"""`statectl read` and `statectl sql`, through the console script's entry point.

Mistakes found in `_metadata` fail before Spark starts; a fresh process loads no
Spark module for them. One read runs as a process of its own, so that its JVM
has the terminal to print on (it must not).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from support.cli_runner import statectl, statectl_process
from support.readers_savepoints import HIDDEN_ID, PARTITIONS, build_base, build_derived

OPERATORS = f"src, proc, win, rules, {HIDDEN_ID} (no uid)"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-read")
    base = build_base(root / "base [v1]")
    return base, build_derived(base, root / "derived")


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # nothing from Spark or the JVM on the terminal
    return result.stdout


def failed(result) -> str:
    """The one error line of a failed run."""
    assert result.returncode == 1, result
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def jsonl(text: str) -> list[dict]:
    return sorted((json.loads(line) for line in text.splitlines()), key=json.dumps)


def test_mistakes_in_what_to_read_fail_before_spark_starts(saved):
    base = saved[0].location
    cases = [
        (["--uid", "nope"], f"error: no operator with uid 'nope'; operators: {OPERATORS}"),
        ([], "error: name the operator with exactly one of --uid, --operator-id or --name; "
             f"operators: {OPERATORS}"),
        (["--uid", "proc", "--state", "cnt"],
         "error: operator proc has no keyed state 'cnt'; it has keyed states: "
         "count, events, attrs, total, acc, seen"),
        (["--uid", "src"], "error: operator src has several states; choose one with --state: "
                           "operator states: offsets (list), partitions (union)"),
        (["--uid", "rules", "--timers"], "error: operator rules has no keyed state, so no "
                                         "timers; it has operator states: rules (broadcast)"),
        (["--uid", "proc", "--timers", "--state", "count"],
         "error: --timers reads the timers table; do not combine it with --state"),
        (["--operator-id", "xyz"], "error: operator id must be 32 hexadecimal digits, got 'xyz'"),
        (["--uid", "proc", "--format", "parquet"],
         "error: --format parquet writes a directory: give it with --output PATH"),
        (["--uid", "proc", "--format", "xml"],
         "error: unknown format 'xml'; formats: table, jsonl, csv, parquet"),
    ]
    for args, message in cases:
        assert failed(statectl("read", base, *args)) == message
    assert failed(statectl("read", base + "-nope", "--uid", "proc")) == \
        f"error: {base}-nope: no such savepoint directory"
    help_text = ok(statectl("--help"))
    assert "read" in help_text and "sql" in help_text
    probe = subprocess.run([sys.executable, "-c", "import sys, statectl.cli.app; "
                            "print(sorted(m for m in sys.modules if m.startswith(('pyspark', "
                            "'py4j'))))"], capture_output=True, text=True)
    assert probe.stdout.strip() == "[]"  # info, validate and --help never load Spark


def test_keyed_table_as_json_lines(saved):
    # a process of its own: its JVM starts with the terminal's stderr, and must print nothing there
    out = ok(statectl_process("read", saved[0].location, "--uid", "proc", "--format", "jsonl"))
    t0, t1 = "2024-05-01T12:00:00.000000Z", "2024-05-01T12:00:01.000000Z"
    assert jsonl(out) == jsonl("\n".join(json.dumps(r) for r in [
        {"user": "u0", "count": 3, "events": ["a", "b"], "attrs": {"x": 1}, "total": 1.5,
         "acc": {"sum": 3.0, "n": 2}, "seen": t0},
        {"user": "u1", "count": None, "events": ["c"], "attrs": None, "total": 2.0, "acc": None,
         "seen": None},
        {"user": "u2", "count": 7, "events": None, "attrs": {"y": 2, "z": 3}, "total": None,
         "acc": {"sum": 1.0, "n": 1}, "seen": t1},
        {"user": "u3", "count": None, "events": None, "attrs": None, "total": 4.25, "acc": None,
         "seen": None},
        {"user": "u4", "count": 0, "events": [], "attrs": {}, "total": None, "acc": None,
         "seen": None},
        {"user": "u5", "count": 12, "events": ["d", None], "attrs": {"w": None}, "total": 0.0,
         "acc": {"sum": 0.0, "n": 0}, "seen": t0},
    ]))
    assert list(json.loads(out.splitlines()[0])) == [
        "user", "count", "events", "attrs", "total", "acc", "seen"]


def test_operator_known_by_id_as_csv_with_where(saved):
    out = ok(statectl("read", saved[0].location, "--operator-id", HIDDEN_ID.upper(),
                      "--state", "v", "--format", "csv", "--where", "v >= 100 OR id = 3"))
    lines = list(csv.reader(io.StringIO(out)))
    assert lines[0] == ["id", "v"]
    assert sorted(lines[1:]) == [["1", "100"], ["2", "200"]]  # id 3 has no v: not listed


def test_window_table_on_the_terminal(saved):
    out = ok(statectl("read", saved[0].location, "--uid", "win", "--limit", "3"))
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines[0] == ["user", "shard", "namespace", "clicks"]
    assert len(lines) == 6 and lines[-1] == ["3", "row(s)"]
    assert all(row[2].startswith('{"start":') for row in lines[2:5])


def test_timers_of_a_shallow_copy_written_to_a_file(saved, tmp_path):
    out = tmp_path / "timers.jsonl"
    assert ok(statectl("read", saved[1].location, "--uid", "proc", "--timers",
                       "-f", "jsonl", "-o", str(out))) == ""
    assert jsonl(out.read_text()) == [
        {"user": "u0", "timestamp": 1000, "domain": "event"},
        {"user": "u1", "timestamp": 2000, "domain": "processing"},
        {"user": "u2", "timestamp": 3000, "domain": "event"},
    ]


def test_union_state_written_as_parquet(saved, tmp_path):
    out = tmp_path / "partitions"
    ok(statectl("read", saved[0].location, "--uid", "src", "--state", "partitions",
                "--format", "parquet", "--output", str(out)))
    table = pq.read_table(out)
    assert table.column_names == ["value"]
    assert sorted(table.column("value").to_pylist()) == [v for _, v in PARTITIONS]


def test_sql_over_views_of_every_kind(saved):
    query = ("SELECT w.user, sum(w.clicks) AS clicks, first(r.value) AS rule, "
             "(SELECT count(*) FROM `src.partitions`) AS partitions, "
             f"(SELECT max(v) FROM `{HIDDEN_ID}`) AS top "
             "FROM win w LEFT JOIN `rules.rules` r ON r.key = concat('r', w.shard) "
             "GROUP BY w.user ORDER BY w.user")
    out = ok(statectl("sql", saved[0].location, query, "--format", "jsonl"))
    assert [json.loads(line) for line in out.splitlines()] == [
        {"user": "a", "clicks": 13, "rule": 1, "partitions": 4, "top": 200},
        {"user": "b", "clicks": 2, "rule": 1, "partitions": 4, "top": 200},
    ]


def test_bad_sql_and_bad_where_are_one_line_errors(saved):
    views = ("Views: `src.offsets`, `src.partitions`, proc, `proc.timers`, win, `win.timers`, "
             f"`rules.rules`, `{HIDDEN_ID}`, `{HIDDEN_ID}.timers`, catalogue")
    message = failed(statectl("sql", saved[0].location, "SELECT * FROM offsets"))
    assert message.startswith("error: query failed: [TABLE_OR_VIEW_NOT_FOUND] The table or view "
                              "`offsets` cannot be found.")
    assert message.endswith(views)
    message = failed(statectl("read", saved[0].location, "--uid", "proc", "--where", "cnt > 1"))
    assert message.startswith("error: --where 'cnt > 1': [UNRESOLVED_COLUMN.WITH_SUGGESTION] "
                              "A column, variable, or function parameter with name `cnt` "
                              "cannot be resolved.")


def test_a_damaged_file_is_a_one_line_error(tmp_path):
    sp = build_base(tmp_path / "sp")
    path = sp.location + "/" + sp.operator("proc").keyed.files[1].ref.path
    data = bytearray(open(path, "rb").read())
    data[10] ^= 1
    open(path, "wb").write(bytes(data))
    assert failed(statectl("read", sp.location, "--uid", "proc")) == \
        f"error: {path}: checksum mismatch (file altered or corrupt)"
