"""Every dev fixture read in full equals its expected.json: operators, states, keys,
namespaces, timers, TTL timestamps, operator list, union and broadcast state."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import pytest

from statectl.statefmt.flink.savepoint import (FlinkSplit, keyed_table, open_flink_savepoint,
                                               operator_state_table, read_split, timers_table)

FIXTURES = Path(__file__).parent / "fixtures" / "flink-dev"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())


@pytest.fixture(scope="module", params=NAMES)
def fixture(request):
    expected = json.loads((FIXTURES / request.param / "expected.json").read_text())
    sp = open_flink_savepoint(FIXTURES / request.param / "savepoint")
    return expected, sp


# --- normalising our rows to expected.json's conventions ------------------------------

def label(key) -> str:
    """expected.json names keys by label: a String itself, a number in decimal, a Tuple '(f0,f1)'."""
    if isinstance(key, (list, tuple)):
        return "(" + ",".join(label(k) for k in key) + ")"
    return key if isinstance(key, str) else str(key)


def norm(value):
    """Tuples (structs f0..fn) as lists, maps as dicts with string keys, the rest as is."""
    if isinstance(value, dict):
        if value and all(k == f"f{i}" for i, k in enumerate(value)):
            return [norm(v) for v in value.values()]
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {label(k): norm(v) for k, v in value}
        return [norm(v) for v in value]
    return value


def key_of(row: dict, key_names: list[str]):
    if key_names == ["key"]:
        return row["key"]
    return [row[n] for n in key_names]


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            (a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


# --- tests ----------------------------------------------------------------------------

def test_operators(fixture):
    expected, sp = fixture
    assert sp.metadata.version == 6
    ops = {op.uid: op for op in sp.operators}
    assert set(ops) == set(expected["operators"])
    for uid, exp in expected["operators"].items():
        op = ops[uid]
        assert (op.operator_id, op.name, op.parallelism, op.max_parallelism) == \
            (exp["operator_id"], exp["name"], exp["parallelism"], exp["max_parallelism"])
        names = {s.name for s in op.states}
        want = set(exp.get("keyed_state", {})) | set(exp.get("operator_state", {})) | \
            set(exp.get("broadcast_state", {})) | {t["state_name"] for t in exp.get("timers", {}).values()}
        assert names == want, uid
        if exp.get("stateless"):
            assert op.states == [] and op.files == []


def test_keyed_state(fixture):
    expected, sp = fixture
    for uid, exp in expected["operators"].items():
        if "keyed_state" not in exp:
            continue
        op = sp.operator(uid)
        table = keyed_table(op)
        key_names = [f.name for f in table.schema][1:1 + (1 if "key" in table.schema.names else 2)]
        rows = table.to_pylist()
        # every row's key group is the one real Flink gave its key
        for row in rows:
            assert row["_key_group"] == expected["keys"][label(key_of(row, key_names))]["key_group"]
        for name, state in exp["keyed_state"].items():
            info = next(s for s in op.states if s.name == name)
            if "state_serializer" in state:
                assert info.serializer == state["state_serializer"], (uid, name)
            if isinstance(state["values"], list):  # window contents: one entry per (key, window)
                got = sorted(
                    ([label(key_of(r, key_names)), [r["namespace"]["start"], r["namespace"]["end"]], norm(r[name])]
                     for r in rows if r[name] is not None), key=json.dumps)
                want = sorted(([e["key"], e["window"], e["value"]] for e in state["values"]), key=json.dumps)
                assert same(got, want), (uid, name)
                assert "namespace" in table.schema.names
                continue
            assert "namespace" not in table.schema.names
            got = {label(key_of(r, key_names)): norm(r[name]) for r in rows if r[name] is not None}
            want = state["values"]
            if state["kind"] == "AGGREGATING":
                want = {k: v["accumulator"] for k, v in want.items()}
            assert same(got, want), (uid, name)
            if "timestamps" in state:
                bounds = state["timestamps"]["bounds"]
                ts = {label(key_of(r, key_names)): norm(r[name + "_ttl_ts"])
                      for r in rows if r[name] is not None}
                assert ts.keys() == bounds.keys()
                checked = 0
                for k, b in bounds.items():
                    if isinstance(b, dict):
                        assert ts[k].keys() == b.keys()
                        for mk, (lo, hi) in b.items():
                            assert lo <= ts[k][mk] <= hi
                            checked += 1
                    else:
                        assert b[0] <= ts[k] <= b[1]
                        checked += 1
                assert checked > 0


def test_timers(fixture):
    expected, sp = fixture
    for uid, exp in expected["operators"].items():
        if "timers" not in exp:
            continue
        op = sp.operator(uid)
        table = timers_table(op)
        key_names = [n for n in table.schema.names if n not in ("_key_group", "namespace", "timestamp",
                                                                 "domain", "service")]
        rows = table.to_pylist()
        for domain_name, t in exp["timers"].items():
            domain = "event" if domain_name == "event_time" else "processing"
            service = t["state_name"].split("_", 2)[-1].split("_", 1)[-1]
            mine = [r for r in rows if r["domain"] == domain and r["service"] == service]
            for r in mine:
                assert r["_key_group"] == expected["keys"][label(key_of(r, key_names))]["key_group"]
            if isinstance(t["values"], list):
                got = sorted(([label(key_of(r, key_names)), r["timestamp"],
                               [r["namespace"]["start"], r["namespace"]["end"]]] for r in mine), key=json.dumps)
                want = sorted(([e["key"], e["timestamp"], e["window"]] for e in t["values"]), key=json.dumps)
            else:
                got = {}
                for r in mine:
                    got.setdefault(label(key_of(r, key_names)), []).append(r["timestamp"])
                got = {k: sorted(v) for k, v in got.items()}
                want = {k: sorted(v) for k, v in t["values"].items() if v}
            assert got == want, (uid, domain_name)


def test_operator_state(fixture):
    expected, sp = fixture
    for uid, exp in expected["operators"].items():
        op = sp.operator(uid) if not exp.get("stateless") else None
        for name, state in exp.get("operator_state", {}).items():
            rows = operator_state_table(op, name).to_pylist()
            got = {}
            for r in rows:
                got.setdefault(str(r["subtask"]), []).append(r["value"])
            assert got == state["subtasks"], (uid, name)
            assert op.operator_states[name].kind == {"UNION": "union", "SPLIT_DISTRIBUTE": "list"}[
                state["distribution"]]
        for name, state in exp.get("broadcast_state", {}).items():
            rows = operator_state_table(op, name).to_pylist()
            assert {r["key"]: r["value"] for r in rows} == state["subtasks"]["0"]
            assert all(s == state["subtasks"]["0"] for s in state["subtasks"].values())


def test_splits_pickle_and_key_group_filter(fixture):
    expected, sp = fixture
    op = next(o for o in sp.operators if o.uid.endswith("-proc"))
    assert op.keyed_splits
    split = pickle.loads(pickle.dumps(op.keyed_splits[-1]))
    assert isinstance(split, FlinkSplit)
    all_rows = [r for b in read_split(split, "keyed") for r in b.to_pylist()]
    groups = sorted({r["_key_group"] for r in all_rows})
    assert groups and split.key_groups[0] <= groups[0] and groups[-1] <= split.key_groups[1]
    wanted = set(groups[::2])
    filtered = [r for b in read_split(split, "keyed", key_groups=wanted) for r in b.to_pylist()]
    assert filtered == [r for r in all_rows if r["_key_group"] in wanted]


def test_descriptions(fixture):
    """What `info` shows: per state its kind, serializer, Arrow type, TTL; every file once with its size."""
    expected, sp = fixture
    from statectl.statefmt.flink.savepoint import is_flink_savepoint
    assert is_flink_savepoint(sp.location)
    on_disk = {f.name: f.stat().st_size for f in Path(str(sp.location)).iterdir() if f.name != "_metadata"}
    listed = {Path(f.path).name: f.size for op in sp.operators for f in op.files}
    assert listed == on_disk
    for uid, exp in expected["operators"].items():
        op = sp.operator(uid)
        for name, state in exp.get("keyed_state", {}).items():
            info = next(s for s in op.states if s.name == name)
            assert info.kind == state["kind"].lower()
            assert info.ttl == ("ttl" in state)
            assert info.size == sum(f.size for f in op.files) or expected["inline_threshold"] != "0 bytes"
        for name in exp.get("broadcast_state", {}):
            info = next(s for s in op.states if s.name == name)
            assert (info.kind, str(info.arrow_type)) == ("broadcast", "map<string, string>")
    proc = next(op for op in sp.operators if op.uid.endswith("-proc"))
    assert str(next(s for s in proc.states if s.name == "count").arrow_type) == "int64"
    assert str(next(s for s in proc.states if s.name == "events").arrow_type) == "list<item: string>"
    assert proc.key_type is not None and proc.keyed_schema.field("_key_group").type == "int32"


def test_not_flink(tmp_path):
    from statectl.statefmt.flink.savepoint import is_flink_savepoint
    (tmp_path / "_metadata").write_text('{"format": "statectl"}')
    assert not is_flink_savepoint(tmp_path)
    assert not is_flink_savepoint(tmp_path / "missing")
