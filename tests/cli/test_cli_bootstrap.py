"""`statectl bootstrap` and `statectl modify`, through the console script's entry point.

Interrupted and killed bootstraps run as processes of their own, started as from a terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from statectl.statefmt.formats import load
from support import REPO
from support.blocked_write import blocked_bootstrap
from support.cli_runner import statectl
from support.savepoint_rows import files_below, keyed_rows, state_rows, timer_rows, tree_digest

EXAMPLES = REPO / "examples"


def fails_cleanly(result, message: str) -> None:
    """Exit 1 with exactly one line, the message, and no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {message}"]


def expected_proc_rows() -> dict:
    """The example's keyed table of `proc`, computed from its input files by plain Python."""
    data = EXAMPLES / "data"
    rows: dict = defaultdict(dict)
    for line in (data / "counts.csv").read_text().splitlines()[1:]:
        user, n = line.split(",")
        rows[user]["count"] = int(n)
    events = pq.read_table(data / "events.parquet").to_pylist()
    for e in sorted(events, key=lambda e: e["ts"]):
        rows[e["user"]].setdefault("events", []).append(e["event"])
    for line in (data / "attrs.jsonl").read_text().splitlines():
        a = json.loads(line)
        rows[a["user"]].setdefault("attrs", {})[a["attr"]] = a["val"]
    for a in pq.read_table(data / "amounts.parquet").to_pylist():
        r = rows[a["user"]]
        r["total"] = round(r.get("total", 0) + a["amount"], 6)
        r["mean"] = {"sum": round(r.get("mean", {"sum": 0})["sum"] + a["amount"], 6),
                     "count": r.get("mean", {"count": 0})["count"] + 1}
    names = ("count", "events", "attrs", "total", "mean")
    return {user: {n: r.get(n) for n in names} for user, r in rows.items()}


def actual_proc_rows(location=None, rows=None) -> dict:
    out = {}
    for r in rows if rows is not None else keyed_rows(location, "proc"):
        r.pop("_key_group", None)
        user = r.pop("user")
        r["attrs"] = dict(r["attrs"]) if r["attrs"] is not None else None
        r["total"] = round(r["total"], 6) if r["total"] is not None else None
        if r["mean"] is not None:
            r["mean"] = {"sum": round(r["mean"]["sum"], 6), "count": r["mean"]["count"]}
        out[user] = r
    return out


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "savepoint"
    result = statectl("bootstrap", "--spec", str(EXAMPLES / "spec.yaml"), str(out))
    assert result.returncode == 0, result.stderr
    return out, result


def test_the_example_spec_round_trips_through_the_cli(example):
    out, result = example
    assert f"wrote savepoint {load(out).savepoint_id} to {out}" in result.stdout
    for uid in ("proc", "src", "union-op", "bcast"):
        assert f" {uid} " in result.stdout
    assert "keyed state of proc" in result.stderr and "tasks" in result.stderr  # progress bars
    assert actual_proc_rows(out) == expected_proc_rows()
    assert sorted(r["user"] for r in timer_rows(out, "proc")) == [f"user-{i:02d}" for i in range(8)]
    assert sorted(r["value"] for r in state_rows(out, "src", "offsets")) == [
        1000 + 17 * p for p in range(6)]
    assert sorted(r["value"] for r in state_rows(out, "union-op", "members")) == [
        f"node-{i}" for i in range(4)]
    assert sorted((r["key"], r["value"]) for r in state_rows(out, "bcast", "rules")) == [
        ("churn", "view+"), ("fraud", "buy{3,}"), ("upsell", "cart buy")]
    sp = load(out)
    assert [(op.uid, op.parallelism, op.max_parallelism) for op in sp.operators] == [
        ("proc", 2, 128), ("src", 2, 128), ("union-op", 3, 128), ("bcast", 2, 128)]
    assert statectl("validate", str(out)).returncode == 0
    # and through `statectl read`, as a user reads it back
    read = statectl("read", str(out), "--uid", "proc", "--format", "jsonl")
    assert read.returncode == 0, read.stderr
    rows = [json.loads(line) for line in read.stdout.splitlines()]
    assert actual_proc_rows(rows=rows) == expected_proc_rows()


def test_spec_mistakes_fail_before_spark_with_one_line(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("operators:\n  - uid: a\n    keyed: {key: k, input: nope.csv, "
                    "states: [{name: v, kind: value, column: x}]}\n")
    fails_cleanly(statectl("bootstrap", "--spec", str(spec), str(tmp_path / "o")),
                  f"operator 'a'.keyed.input: input nope.csv not found (looked at {tmp_path}/nope.csv)")
    spec.write_text("operators:\n  - uid: a\n    paralelism: 2\n")
    fails_cleanly(statectl("bootstrap", "--spec", str(spec), str(tmp_path / "o")),
                  "operators[0]: unknown field(s) paralelism; known: broadcast_state, flink, keyed, "
                  "max_parallelism, operator_id, operator_state, parallelism, uid")
    fails_cleanly(statectl("bootstrap", "--spec", str(EXAMPLES / "spec.yaml"), "--format",
                           "lsm", str(tmp_path / "o")),
                  "unknown format 'lsm'; known: canonical, rocksdb, flink")
    assert not (tmp_path / "o").exists()


def test_bad_data_ends_with_one_message_and_no_files(tmp_path):
    (tmp_path / "d.csv").write_text("user,n\na,1\nb,2\na,3\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"operators": [{"uid": "p", "parallelism": 2, "keyed": {
        "key": ["user"], "input": {"path": "d.csv"},
        "states": [{"name": "n", "kind": "value", "column": "n"}]}}]}))
    out = tmp_path / "out"
    fails_cleanly(statectl("bootstrap", "--spec", str(spec), str(out)),
                  "operator 'p', value state 'n': key user=a has 2 rows; a value state holds "
                  "one value per key (set combine to sum, min, max or any)")
    assert not out.exists()  # no file of the write, nor the folder it made


def test_modify_and_bootstrap_on_a_base(example, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(example[0], base)
    before = tree_digest(base)
    base_id = load(base).savepoint_id

    # unknown uid: one message, nothing written (no JVM: modify never starts Spark)
    fails_cleanly(statectl("modify", str(base), str(tmp_path / "x"), "--remove", "nope"),
                  "no operator with uid 'nope'; operators: proc, src, union-op, bcast")
    assert not (tmp_path / "x").exists()

    modified = tmp_path / "modified"
    result = statectl("modify", str(base), str(modified), "--remove", "union-op",
                      "--rename", "bcast=rules", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(o["uid"], o["action"]) for o in doc["operators"]] == [
        ("proc", "shallow copy"), ("src", "shallow copy"), ("rules", "renamed")]
    assert doc["removed"] == ["union-op"]
    assert files_below(modified) == ["_metadata"]

    # bootstrap --base: replace src with new offsets, share proc and rules
    (tmp_path / "offsets.csv").write_text("offset\n5\n6\n")
    spec = tmp_path / "v2.yaml"
    spec.write_text("operators:\n  - uid: src\n    parallelism: 1\n    operator_state:\n"
                    "      - {name: offsets, kind: list, column: offset, input: offsets.csv}\n")
    v2 = tmp_path / "v2"
    result = statectl("bootstrap", "--spec", str(spec), "--base", str(modified), str(v2))
    assert result.returncode == 0, result.stderr
    sp = load(v2)
    assert [op.uid for op in sp.operators] == ["proc", "src", "rules"]
    assert sorted(r["value"] for r in state_rows(v2, "src", "offsets")) == [5, 6]
    for op, f in sp.data_files():
        assert (f.ref.savepoint == base_id) == (op.uid != "src")  # never chains through modified

    standalone = tmp_path / "standalone"
    assert statectl("modify", str(v2), str(standalone), "--self-contained").returncode == 0
    assert tree_digest(base) == before  # the base was never written to

    shutil.rmtree(base)
    result = statectl("validate", str(v2))
    assert result.returncode == 1
    assert f"savepoint {base_id} at {base}, which this one references, is gone" in result.stdout
    result = statectl("read", str(v2), "--uid", "proc")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {base}/") and "file is missing" in line
    assert statectl("validate", str(standalone)).returncode == 0
    assert actual_proc_rows(standalone) == expected_proc_rows()


@pytest.mark.slow
def test_an_interrupted_bootstrap_removes_every_file_it_began(tmp_path):
    proc, _, block, out = blocked_bootstrap(tmp_path, stderr=subprocess.PIPE)  # on the warm engine
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1] == "error: interrupted"
    assert files_below(out) == []  # no _metadata, no data file, no marker
    block.unlink()  # the waiting task would go on now, had the interrupt not killed it
    time.sleep(3)
    assert files_below(out) == []


@pytest.mark.slow
def test_a_warm_bootstrap_killed_outright_begins_no_file_after_it(tmp_path):
    """SIGKILL: no clean-up runs, and the write's tasks are the warm server's, not the command's
    children; they watch the command's process and end with it (readers/owner.py)."""
    proc, spec, block, out = blocked_bootstrap(tmp_path)  # on the warm engine
    os.killpg(proc.pid, signal.SIGKILL)  # the command; the server runs in a session of its own
    proc.wait()
    time.sleep(2)  # the waiting task's watch looks every 0.5 s
    left = set(files_below(out))
    block.unlink()  # the waiting task would write its file now, had it outlived the command
    time.sleep(4)
    assert set(files_below(out)) == left and not (out / "_metadata").exists()
    result = statectl("bootstrap", "--spec", str(spec), str(out))
    assert result.returncode == 0, result.stderr
    assert "left by an earlier write that did not finish" in result.stdout
    assert sorted((r["user"], r["n"]) for r in keyed_rows(out, "p")) == sorted((f"u{i}", 1) for i in range(200))


@pytest.mark.slow
def test_a_killed_bootstrap_leaves_no_savepoint_and_a_rerun_succeeds(tmp_path):
    # the whole job killed: statectl, its JVM, its workers (a Spark of its own; on the warm
    # engine the server interrupts a dead command's operation: tests/cli/test_engine.py)
    proc, spec, block, out = blocked_bootstrap(tmp_path, env={"STATECTL_ENGINE": "classic"})
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "_metadata").exists()
    assert any(p.startswith("_writing-") for p in files_below(out))

    block.unlink()
    result = statectl("bootstrap", "--spec", str(spec), str(out))
    assert result.returncode == 0, result.stderr
    assert "left by an earlier write that did not finish" in result.stdout
    sp = load(out)
    assert set(files_below(out)) == {f.ref.path for _, f in sp.data_files()} | {"_metadata"}
    assert sorted((r["user"], r["n"]) for r in keyed_rows(out, "p")) == sorted(
        (f"u{i}", 1) for i in range(200))
