"""`statectl stats` through the console script's entry point (no Spark): the JSON's exact fields,
each documented in docs/STATS.md, and its figures those of the library; terminal charts in 80
columns; a self-contained HTML report with the figures; one error line for bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len

from support import REPO
from support.cli_runner import statectl, statectl_process
from support.readers_savepoints import build_own_family
from statectl.cli.output import human_bytes
from statectl.readers.stats import savepoint_stats
from statectl.statefmt.expiry import Ttls
from statectl.statefmt.formats import load

POJO = Path(__file__).parents[1] / "fixtures" / "flink-dev" / "pojo-hashmap-canonical" / "savepoint"
NOW = "1795346176410"

FIELDS = {
    "stats": {"location", "now", "top", "parallelism", "metadata_bytes", "inline_bytes", "bytes", "operators"},
    "operator": {"uid", "operator_id", "name", "format", "parallelism", "max_parallelism", "bytes",
                 "inline_bytes", "keyed", "operator_states", "unreadable"},
    "keyed": {"rows", "bytes", "bytes_exact", "states", "key_groups", "subtasks", "rescaled", "timers"},
    "state": {"name", "kind", "rows", "elements", "bytes", "largest", "most_elements", "ttl"},
    "key": {"key", "namespace", "bytes", "elements"},
    "ttl": {"ttl_ms", "entries", "expired_entries", "expired_bytes", "first_access", "last_access",
            "last_access_buckets"},
    "bucket": {"start", "end", "count"},
    "key_group": {"key_group", "rows", "bytes"},
    "spread": {"parallelism", "subtasks", "skew"},
    "subtask": {"subtask", "first_key_group", "last_key_group", "rows", "bytes"},
    "timers": {"domain", "count", "first", "last", "buckets"},
    "operator_state": {"name", "kind", "rows", "bytes"},
    "unreadable": {"part", "reason"},
}


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    return build_own_family(tmp_path_factory.mktemp("own"))["canonical"].location


def run_json(*args) -> dict:
    result = statectl("stats", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_json_has_exactly_the_documented_fields():
    doc = run_json(str(POJO), "--now", NOW, "--ttl", "ttl_last=1h", "--parallelism", "3", "--top", "2")
    seen = set()

    def check(kind, obj):
        assert set(obj) == FIELDS[kind], kind
        seen.add(kind)
    check("stats", doc)
    for op in doc["operators"]:
        check("operator", op)
        for s in op["operator_states"]:
            check("operator_state", s)
        for u in op["unreadable"]:
            check("unreadable", u)
        keyed = op["keyed"]
        if keyed is None:
            continue
        check("keyed", keyed)
        for g in keyed["key_groups"]:
            check("key_group", g)
        for spread in (keyed["subtasks"], keyed["rescaled"]):
            check("spread", spread)
            for s in spread["subtasks"]:
                check("subtask", s)
        for t in keyed["timers"]:
            check("timers", t)
            for b in t["buckets"]:
                check("bucket", b)
        for state in keyed["states"]:
            check("state", state)
            for k in state["largest"] + (state["most_elements"] or []):
                check("key", k)
            if state["ttl"] is not None:
                check("ttl", state["ttl"])
    assert seen == set(FIELDS) - {"unreadable"}
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", (REPO / "docs" / "STATS.md").read_text(), re.M))
    assert set().union(*FIELDS.values()) <= documented


def test_the_json_figures_are_the_librarys():
    doc = run_json(str(POJO), "--now", "2026-11-22T11:16:16.410Z", "--ttl", "1ms", "--uid", "pj-proc")
    expected = savepoint_stats(load(str(POJO)), ["pj-proc"], now=int(NOW), ttls=Ttls(every=1)).to_json()
    assert doc == json.loads(json.dumps(expected))
    states = {s["name"]: s for s in doc["operators"][0]["keyed"]["states"]}
    assert states["ttl_last"]["ttl"]["ttl_ms"] == 1 and states["ttl_last"]["ttl"]["expired_entries"] > 0
    assert doc["top"] == 5 and doc["parallelism"] is None and doc["operators"][0]["keyed"]["rescaled"] is None


@pytest.mark.parametrize("which", ["own", "flink"])
def test_the_charts_fit_80_columns(own, which):
    path = own if which == "own" else str(POJO)
    ttl = ["--ttl", "ttl_seen=1d"] if which == "flink" else []
    result = statectl("stats", path, "--parallelism", "2", *ttl, "--now", NOW)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert "Largest keys of" in result.stdout and "Bytes per subtask after a rescale to 2" in result.stdout
    sp = load(path)
    total = sum(o.bytes for o in savepoint_stats(sp).operators)
    assert f"state {human_bytes(total)} in {len(sp.operators)} operator(s)" in result.stdout
    if which == "flink":
        assert "TTL ttl_seen (86,400,000 ms): 0 of 74 entries expired" in result.stdout
        assert "give --ttl ttl_last=DURATION" in result.stdout


def test_the_html_report_is_self_contained_and_holds_the_figures(tmp_path):
    report = tmp_path / "report.html"
    result = statectl("stats", str(POJO), "--html", str(report), "--json", "--top", "3")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    text = report.read_text(encoding="utf-8")
    assert not re.search(r"https?:|<script|@import|url\(|<link|src=", text, re.I)
    assert text.startswith("<!DOCTYPE html>") and text.count("<svg") > 20
    for op in doc["operators"]:
        if op["bytes"]:
            assert f">{op['uid']}<" in text and human_bytes(op["bytes"]) in text
    proc = next(o for o in doc["operators"] if o["uid"] == "pj-proc")
    for state in proc["keyed"]["states"]:
        assert f"Largest keys of {state['name']}" in text
        assert all(f">{k['key']}<" in text for k in state["largest"])


@pytest.mark.parametrize("args, line", [
    (["--uid", "nope"], "error: no operator with uid 'nope'; operators: pj-rules-src, pj-src, pj-snk, "
                        "pj-union-op, pj-bcast, pj-win, pj-proc"),
    (["--now", "yesterday"], "error: --now 'yesterday': give epoch milliseconds or an ISO 8601 time "
                             "(2026-11-27T10:00:00Z)"),
    (["--ttl", "abc"], "error: --ttl 'abc': give a duration such as 7d, 12h, 30min, 45s, 500ms or P7D"),
    (["--ttl", "ttl_seen=0s"], "error: --ttl 'ttl_seen=0s': a time to live is longer than 0"),
    (["--ttl", "count=1d"], "error: --ttl count=...: no TTL state 'count' in the operators measured; "
                            "TTL states: ttl_last, ttl_seen"),
    (["--ttl", "ttl_last=1d", "--uid", "pj-win"], "error: --ttl ttl_last=...: no TTL state 'ttl_last' in the "
                                                  "operators measured; TTL states: none"),
    (["--top", "-1"], "error: --top must be a whole number of keys, 0 or more; got -1"),
    (["--parallelism", "0"], "error: --parallelism must be at least 1, got 0"),
    (["--parallelism", "129"], "error: --parallelism 129 exceeds the max parallelism 128 of operator pj-win"),
    (["--html", "/nonexistent-folder/r.html"], "error: --html /nonexistent-folder/r.html: cannot write the "
                                               "report: its folder /nonexistent-folder does not exist"),
])
def test_bad_input_is_one_error_line(args, line, tmp_path):
    result = statectl("stats", str(POJO), *args, "--html", str(tmp_path / "r.html")) if "--html" not in args \
        else statectl("stats", str(POJO), *args)
    assert result.returncode == 1
    assert result.stdout == "" and result.stderr.strip() == line
    assert not (tmp_path / "r.html").exists()


def test_a_damaged_flink_stream_is_reported_and_the_rest_measured(tmp_path):
    copy = tmp_path / "damaged"
    shutil.copytree(POJO.parents[1] / "long-hashmap-canonical" / "savepoint", copy)
    sp = load(str(copy))
    proc = sp.operator("lk-proc")
    stream = copy / Path(proc.keyed.files[0].ref.path).name
    data = stream.read_bytes()
    stream.write_bytes(data[:len(data) // 2] + bytes(len(data) - len(data) // 2))  # same size, zeros
    doc = run_json(str(copy))
    ops = {o["uid"]: o for o in doc["operators"]}
    assert ops["lk-proc"]["keyed"] is None
    (part,) = ops["lk-proc"]["unreadable"]
    assert set(part) == FIELDS["unreadable"] and part["part"] == "keyed state"
    assert part["reason"].startswith(f"{stream}: stream ends early in key group")
    whole = {o.uid: o for o in savepoint_stats(load(str(POJO.parents[1] / "long-hashmap-canonical" / "savepoint"))
                                               ).operators}
    for uid in ("lk-win", "lk-union-op", "lk-src", "lk-bcast"):
        assert ops[uid]["unreadable"] == [] and ops[uid]["bytes"] == whole[uid].bytes > 0
    charts = statectl("stats", str(copy))
    assert charts.returncode == 0 and "unreadable: keyed state: " in charts.stdout


def test_stats_needs_no_java(tmp_path):
    """A process of its own with no Java anywhere: every figure still comes (no JVM, no Spark)."""
    no_java = {"JAVA_HOME": str(tmp_path / "no-java"),
               "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                       if not os.path.exists(os.path.join(p, "java")))}
    done = statectl_process("stats", str(POJO), "--json", "--now", NOW, env=no_java)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == run_json(str(POJO), "--now", NOW)
