"""Every dev fixture read in full equals its expected.json: operators, states, keys,
namespaces, timers, TTL timestamps, operator list, union and broadcast state."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from statectl.statefmt.flink.describe import FlinkSplit
from statectl.statefmt.flink.savepoint import (keyed_table, open_flink_savepoint, operator_state_table, read_split,
                                               timers_table)

from statectl.statefmt.flink.tables import key_fields
from support.flink_expect import (FIXTURE_NAMES, FIXTURES, check_broadcast, check_keyed, check_list_state,
                           check_timers, expected_of, key_names_of)



@pytest.fixture(scope="module", params=FIXTURE_NAMES)
def fixture(request):
    return expected_of(request.param), open_flink_savepoint(FIXTURES / request.param / "savepoint")


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
        key_names = [f.name for f in key_fields(op.key_type)]
        assert check_keyed(expected, uid, table.to_pylist(), key_names, table.schema.names,
                           {s.name: s.serializer for s in op.states}) > 0


def test_timers(fixture):
    expected, sp = fixture
    for uid, exp in expected["operators"].items():
        if "timers" not in exp:
            continue
        table = timers_table(sp.operator(uid))
        check_timers(expected, uid, table.to_pylist(), key_names_of(table.schema.names))


def test_operator_state(fixture):
    expected, sp = fixture
    for uid, exp in expected["operators"].items():
        op = sp.operator(uid) if not exp.get("stateless") else None
        for name, state in exp.get("operator_state", {}).items():
            check_list_state(state, operator_state_table(op, name).to_pylist(), by_subtask=True)
            assert op.operator_states[name].kind == {"UNION": "union", "SPLIT_DISTRIBUTE": "list"}[
                state["distribution"]]
        for name, state in exp.get("broadcast_state", {}).items():
            check_broadcast(state, operator_state_table(op, name).to_pylist())


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
