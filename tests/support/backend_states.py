"""What a heap or RocksDB backend subtask holds, read through its state handles, and what the
suite's full savepoint (builders.build_full_savepoint) says it should hold after a restore:
every keyed state by (key, namespace), and the timers."""

from __future__ import annotations

import pyarrow as pa

from statectl.backends import HeapBackend, RocksDBBackend
from support.builders import KEYED_STATES, keyed_rows, timer_rows

BACKENDS = [HeapBackend, RocksDBBackend]


MAX_P = 16


class Identity:
    """An aggregate whose result is its accumulator, to compare accumulators exactly."""

    def create_accumulator(self):
        return {"sum": 0.0, "count": 0}

    def add(self, value, acc):
        return {"sum": acc["sum"] + value, "count": acc["count"] + 1}

    def get_result(self, acc):
        return acc


def handles(b):
    out = {}
    for d in KEYED_STATES:
        if d.kind == "value":
            out[d.name] = b.value_state(d.name, d.value_type)
        elif d.kind == "list":
            out[d.name] = b.list_state(d.name, d.value_type)
        elif d.kind == "map":
            out[d.name] = b.map_state(d.name, d.user_key_type, d.value_type)
        elif d.kind == "reducing":
            out[d.name] = b.reducing_state(d.name, d.value_type, lambda a, x: a + x)
        else:
            out[d.name] = b.aggregating_state(d.name, d.value_type, Identity())
    return out


def read(h, kind):
    if kind == "value":
        return h.value()
    if kind == "list":
        return h.get() or None
    if kind == "map":
        return sorted(h.items()) or None
    return h.get()


def expected_rows():
    rows = {}
    for r in keyed_rows().to_pylist():
        key = ((r["user"], r["shard"]), _ns(r["namespace"]))
        # an empty list or map reads as no value through a handle
        rows[key] = {d.name: (sorted(r[d.name]) if d.kind == "map" else r[d.name]) or None
                     if d.kind in ("list", "map") and r[d.name] is not None else r[d.name]
                     for d in KEYED_STATES}
    return rows


def _ns(ns):
    return None if ns is None else (ns["start"], ns["end"])


def state_of(b) -> dict:
    """Everything a subtask holds: {(key, ns): {state: value}} for each key any state has."""
    hs = handles(b)
    keys = {(k, _ns(ns)) for d in KEYED_STATES for k, ns in b.keys(d.name)}
    out = {}
    for key, ns in keys:
        b.set_current_key(key)
        b.set_current_namespace(None if ns is None else {"start": ns[0], "end": ns[1]})
        out[(key, ns)] = {d.name: read(hs[d.name], d.kind) for d in KEYED_STATES}
    return out


def fire_all(b) -> set:
    got = set()
    for fire, domain in ((b.fire_event_time_timers, "event"), (b.fire_processing_time_timers, "processing")):
        for t in fire(2 ** 62):
            assert b.current_key == t.key
            got.add((t.key, _ns(t.namespace), t.timestamp, domain))
    return got


def expected_timers() -> set:
    return {((r["user"], r["shard"]), _ns(r["namespace"]), r["timestamp"], r["domain"])
            for r in timer_rows().to_pylist()}


def _canon(table: pa.Table, keys) -> list:
    """Rows in a fixed order; an empty list or map is no value, as in a backend."""
    rows = [{k: None if isinstance(v, list) and not v else v for k, v in r.items()}
            for r in table.to_pylist()]
    return sorted(rows, key=lambda r: repr([r[k] for k in keys]))
