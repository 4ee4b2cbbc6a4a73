"""Heap and RocksDB backends: restore by key-group range, state handles, timers, snapshot round trips."""

from __future__ import annotations

import pyarrow as pa
import pytest

from support.builders import build_full_savepoint
from statectl.backends import commit_snapshots
from statectl.statefmt.canonical import keyed_schema, read_file, timers_schema
from statectl.statefmt.errors import LimitError, UsageError
from statectl.statefmt.keygroups import key_group_for_key, subtask_for_key_group
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from support.backend_states import _canon, BACKENDS, expected_rows, expected_timers, fire_all, MAX_P, state_of


def owner(key, p):
    return subtask_for_key_group(key_group_for_key(key, ["string", "int32"], MAX_P), MAX_P, p)


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory):
    return build_full_savepoint(tmp_path_factory.mktemp("sp") / "sp", parallelism=3,
                                max_parallelism=MAX_P)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 3, 5, 16])
def test_restore_puts_every_key_in_its_owner_exactly(savepoint, backend, parallelism):
    expected, timers = expected_rows(), expected_timers()
    seen, fired = {}, set()
    for i in range(parallelism):
        with backend.restore(savepoint.location, "proc", subtask=i, parallelism=parallelism) as b:
            got = state_of(b)
            assert all(owner(k, parallelism) == i for k, _ in got)
            assert not set(got) & set(seen)
            seen.update(got)
            t = fire_all(b)
            assert all(owner(k, parallelism) == i for k, *_ in t)
            fired |= t
    assert seen == expected
    assert fired == timers


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_operator_state_redistribution(savepoint, backend, parallelism):
    lists, unions, rules = [], [], []
    for i in range(parallelism):
        with backend.restore(savepoint, "src", subtask=i, parallelism=parallelism) as b:
            lists.append(b.operator_list_state("offsets", "int64").get())
            unions.append(b.union_list_state("members", "string").get())
            rules.append(dict(b.broadcast_state("rules", "string", savepoint.operator("src")
                                                .operator_state("rules").value_type).items()))
    assert [v for part in lists for v in part] == [10, 11, 20]
    assert [len(p) for p in lists] == [len(range(3)[i::parallelism]) for i in range(parallelism)]
    assert all(u == ["a", "b"] for u in unions)
    assert all(r == {"r1": {"pattern": "a*", "weight": 1}, "r2": {"pattern": "b?", "weight": None}}
               for r in rules)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 5])
def test_snapshot_restore_round_trip(savepoint, backend, parallelism, tmp_path):
    out = tmp_path / "cp"
    snaps = []
    for op in ("proc", "src"):
        for i in range(parallelism):
            with backend.restore(savepoint, op, subtask=i, parallelism=parallelism) as b:
                snaps.append(b.snapshot(out))
    sp = load(commit_snapshots(out, snaps).location)
    proc, old = sp.operator("proc"), savepoint.operator("proc")
    assert proc.parallelism == parallelism and proc.max_parallelism == MAX_P
    assert proc.keyed.states == old.keyed.states and proc.keyed.key == old.keyed.key

    def table(s, files, schema):
        return pa.concat_tables([read_file(file_location(s, f.ref), f, schema) for f in files])
    keys = ("_key_group", "user", "shard", "namespace")
    assert _canon(table(sp, proc.keyed.files, keyed_schema(proc.keyed)), keys) == \
        _canon(table(savepoint, old.keyed.files, keyed_schema(old.keyed)), keys)
    tkeys = keys + ("timestamp", "domain")
    assert _canon(table(sp, proc.keyed.timers, timers_schema(proc.keyed)), tkeys) == \
        _canon(table(savepoint, old.keyed.timers, timers_schema(old.keyed)), tkeys)
    # and the operator state reads back as before (list order kept)
    src = sp.operator("src")
    offsets = table(sp, src.operator_state("offsets").files,
                    pa.schema([("subtask", pa.int32()), ("value", pa.int64())]))
    assert offsets.column("value").to_pylist() == [10, 11, 20]
    # a second round at another parallelism still holds the same state
    seen = {}
    for i in range(3):
        with backend.restore(sp, "proc", subtask=i, parallelism=3) as b:
            seen.update(state_of(b))
    assert seen == expected_rows()


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
def test_handles_and_timers_from_empty(backend, tmp_path):
    with backend.create("job", subtask=0, parallelism=1, max_parallelism=8,
                        key=[("user", "string")], namespace_type="int64") as b:
        count = b.value_state("count", "int64")
        recent = b.list_state("recent", "string")
        tags = b.map_state("tags", "string", "int32")
        total = b.reducing_state("total", "int64", lambda a, x: a + x)
        avg = b.aggregating_state("avg", {"struct": [{"name": "s", "type": "int64"},
                                                     {"name": "n", "type": "int64"}]},
                                  _Avg())
        b.set_current_key("ann")
        assert count.value() is None and recent.get() == [] and tags.is_empty()
        count.update(1)
        recent.add("a"); recent.add_all(["b", None])
        tags.put("x", 1); tags.put("y", None); tags.put("x", 2)
        total.add(5); total.add(7)
        avg.add(2); avg.add(4)
        b.set_current_namespace(10)
        assert count.value() is None
        count.update(99)
        b.register_event_time_timer(20)
        b.register_event_time_timer(5)
        b.set_current_key("bob")
        b.set_current_namespace(None)
        b.register_event_time_timer(5)
        b.register_event_time_timer(7)
        b.delete_event_time_timer(7)
        b.register_processing_time_timer(1)
        b.set_current_key("ann")
        assert count.value() == 1 and recent.get() == ["a", "b", None]
        assert tags.items() == [("x", 2), ("y", None)] and "x" in tags and "z" not in tags
        assert total.get() == 12 and avg.get() == 3.0
        tags.remove("y")
        assert tags.keys() == ["x"]
        recent.update(["z"])
        assert recent.get() == ["z"]
        fired = []
        for t in b.fire_event_time_timers(10):
            fired.append((t.timestamp, t.key, t.namespace))
            if t.key == ("bob",) and t.timestamp == 5:
                b.register_event_time_timer(8)  # due, fires in the same call
        ann_before_bob = sorted([("ann",), ("bob",)], key=lambda k: (b.key_group_of(k), k))
        assert [f[0] for f in fired] == [5, 5, 8]
        assert {f[1:] for f in fired[:2]} == {(("ann",), 10), (("bob",), None)}
        assert [f[1] for f in fired[:2]] == ann_before_bob
        assert list(b.fire_event_time_timers(19)) == []
        assert [t.timestamp for t in b.fire_event_time_timers(20)] == [20]
        assert [t.key for t in b.fire_processing_time_timers(1)] == [("bob",)]
        b.set_current_key("ann")
        b.set_current_namespace(None)
        count.clear()
        assert count.value() is None
        b.set_current_namespace(10)
        assert count.value() == 99


class _Avg:
    def create_accumulator(self):
        return {"s": 0, "n": 0}

    def add(self, value, acc):
        return {"s": acc["s"] + value, "n": acc["n"] + 1}

    def get_result(self, acc):
        return acc["s"] / acc["n"]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
def test_misuse_is_a_clear_error(savepoint, backend):
    with backend.restore(savepoint, "proc", subtask=0, parallelism=2) as b:
        with pytest.raises(UsageError, match="list state"):
            b.value_state("events", "string")
        with pytest.raises(UsageError, match="no current key"):
            b.value_state("count", "int64").value()
        foreign = next(f"user-{i}" for i in range(100) if owner((f"user-{i}", 0), 2) == 1)
        with pytest.raises(UsageError, match="owned by subtask 1"):
            b.set_current_key((foreign, 0))
        with pytest.raises(UsageError, match="2 column"):
            b.set_current_key("user-0")
    with pytest.raises(LimitError, match="subtask index"):
        backend.create("x", subtask=2, parallelism=2, key=[("k", "int64")]).close()
