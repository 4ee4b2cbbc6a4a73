"""Savepoints for the reader tests: every kind of state, exact rows known in advance.

``base [v1]`` (a directory name with glob characters and a space) holds:

* ``proc``  keyed, key ``user`` string, six keyed states of every kind, timers;
* ``win``   keyed by (``user``, ``shard``) with a window namespace, and timers;
* ``src``   operator list state ``offsets`` and union state ``partitions``, parallelism 3;
* ``rules`` broadcast state ``rules``, parallelism 2;
* an operator known only by its id: keyed by ``id``, one state ``v``.

``derived`` references ``proc`` from the base (a shallow copy) and adds ``sink``.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from statectl.statefmt.build import write_keyed_files, write_operator_state_file
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import (
    Field,
    KeyedSection,
    KeyedStateDescriptor,
    Operator,
    OperatorState,
    Savepoint,
)
from statectl.statefmt.formats import commit, load
from statectl.statefmt.savepoint import merge_lineage, new_savepoint_id, now_iso, shallow_copy
from support.builders import build_full_savepoint, build_native_savepoint
from statectl.statefmt.types import to_arrow

UTC = dt.timezone.utc
ACC = {"struct": [{"name": "sum", "type": "float64"}, {"name": "n", "type": "int64"}]}
WINDOW = {"struct": [{"name": "start", "type": "int64"}, {"name": "end", "type": "int64"}]}
HIDDEN_ID = operator_id_for_uid("hidden-op")

PROC_STATES = (
    KeyedStateDescriptor("count", "value", "int64"),
    KeyedStateDescriptor("events", "list", "string"),
    KeyedStateDescriptor("attrs", "map", "int64", user_key_type="string"),
    KeyedStateDescriptor("total", "reducing", "float64", function="sum"),
    KeyedStateDescriptor("acc", "aggregating", ACC, function="avg"),
    KeyedStateDescriptor("seen", "value", {"timestamp": {"unit": "us", "tz": "UTC"}}),
)

T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

# user, count, events, attrs, total, acc, seen
PROC_ROWS = [
    ("u0", 3, ["a", "b"], {"x": 1}, 1.5, {"sum": 3.0, "n": 2}, T0),
    ("u1", None, ["c"], None, 2.0, None, None),
    ("u2", 7, None, {"y": 2, "z": 3}, None, {"sum": 1.0, "n": 1}, T0 + dt.timedelta(seconds=1)),
    ("u3", None, None, None, 4.25, None, None),
    ("u4", 0, [], {}, None, None, None),
    ("u5", 12, ["d", None], {"w": None}, 0.0, {"sum": 0.0, "n": 0}, T0),
]
PROC_TIMERS = [("u0", 1000, "event"), ("u1", 2000, "processing"), ("u2", 3000, "event")]

# user, shard, namespace (window), clicks
WIN_ROWS = [
    ("a", 1, {"start": 0, "end": 10}, 5),
    ("a", 1, {"start": 10, "end": 20}, 7),
    ("a", 2, {"start": 0, "end": 10}, 1),
    ("b", 1, {"start": 0, "end": 10}, 2),
]
WIN_TIMERS = [("a", 1, {"start": 0, "end": 10}, 9, "event"),
              ("b", 1, {"start": 0, "end": 10}, 9, "event")]

OFFSETS = [(0, 10), (0, 11), (1, 20)]              # (subtask, value); subtask 2 holds none
PARTITIONS = [(0, "p0"), (0, "p1"), (1, "p2"), (2, "p3")]
RULES = [("r1", 1), ("r2", 2)]
HIDDEN_ROWS = [(1, 100), (2, 200), (3, None)]
SINK_PENDING = [(0, "x"), (1, "y")]


def _table(names, types, rows) -> pa.Table:
    cols = list(zip(*rows))
    return pa.table({n: pa.array(list(c), to_arrow(t)) for n, t, c in zip(names, types, cols)})


def _keyed(out, op_id, section, rows, timer_rows, parallelism, max_p) -> KeyedSection:
    names = section.key_names + (["namespace"] if section.namespace_type else [])
    types = section.key_types + ([section.namespace_type] if section.namespace_type else [])
    table = _table(names + [s.name for s in section.states],
                   types + [s.column_type for s in section.states], rows)
    files = write_keyed_files(out, op_id, section, table, max_p, parallelism)
    timers = ()
    if timer_rows:
        timers = write_keyed_files(out, op_id, section, _table(
            names + ["timestamp", "domain"], types + ["int64", "string"], timer_rows),
            max_p, parallelism, timers=True)
    return KeyedSection(section.key, section.states, files, timers, section.namespace_type)


def _operator_state(out, op_id, state: OperatorState, rows) -> OperatorState:
    names = ["key", "value"] if state.kind == "broadcast" else ["subtask", "value"]
    types = [state.key_type, state.value_type] if state.kind == "broadcast" else ["int32", state.value_type]
    f = write_operator_state_file(out, op_id, state, _table(names, types, rows))
    return OperatorState(state.name, state.kind, state.value_type, (f,), state.key_type)


def build_base(path) -> Savepoint:
    out = Location.of(str(path))
    proc_id, win_id = operator_id_for_uid("proc"), operator_id_for_uid("win")
    proc = _keyed(out, proc_id, KeyedSection((Field("user", "string"),), PROC_STATES),
                  PROC_ROWS, PROC_TIMERS, 2, 8)
    win = _keyed(out, win_id, KeyedSection(
        (Field("user", "string"), Field("shard", "int32")),
        (KeyedStateDescriptor("clicks", "value", "int64"),), namespace_type=WINDOW),
        WIN_ROWS, WIN_TIMERS, 2, 16)
    hidden = _keyed(out, HIDDEN_ID, KeyedSection(
        (Field("id", "int64"),), (KeyedStateDescriptor("v", "value", "int32"),)),
        HIDDEN_ROWS, [], 1, 4)
    src_id, rules_id = operator_id_for_uid("src"), operator_id_for_uid("rules")
    offsets = _operator_state(out, src_id, OperatorState("offsets", "list", "int64"), OFFSETS)
    parts = _operator_state(out, src_id, OperatorState("partitions", "union", "string"), PARTITIONS)
    rules = _operator_state(out, rules_id,
                            OperatorState("rules", "broadcast", "int32", key_type="string"), RULES)
    sp = Savepoint(new_savepoint_id(), now_iso(), (
        Operator(src_id, "src", 3, 128, None, (offsets, parts)),
        Operator(proc_id, "proc", 2, 8, proc),
        Operator(win_id, "win", 2, 16, win),
        Operator(rules_id, "rules", 2, 128, None, (rules,)),
        Operator(HIDDEN_ID, None, 1, 4, hidden),
    ))
    return commit(sp, out)


def build_derived(base: Savepoint, path) -> Savepoint:
    """A savepoint whose ``proc`` is a shallow copy of the base's, plus its own ``sink``."""
    out = Location.of(str(path))
    base = load(base.location)
    proc, lineage = shallow_copy(base, base.operator("proc"))
    sink_id = operator_id_for_uid("sink")
    pending = _operator_state(out, sink_id, OperatorState("pending", "list", "string"), SINK_PENDING)
    sp = Savepoint(new_savepoint_id(), now_iso(),
                   (proc, Operator(sink_id, "sink", 2, 128, None, (pending,))),
                   merge_lineage(lineage))
    return commit(sp, out)


def build_own_family(root) -> dict:
    """statectl's own savepoints under *root*: ``canonical`` (:func:`build_base`:
    every kind of state), ``source`` (the builders' full savepoint, parallelism 3 over 16 key
    groups) and ``native`` (its ``proc`` in the RocksDB native format, two subtasks)."""
    source = build_full_savepoint(root / "source", parallelism=3, max_parallelism=16)
    return {"canonical": build_base(root / "base"), "source": source,
            "native": build_native_savepoint(source, root / "native")}
