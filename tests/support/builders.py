"""Small savepoints built with statefmt alone (no Spark), for format tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

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
from statectl.statefmt.formats import commit
from statectl.statefmt.savepoint import new_savepoint_id, now_iso
from statectl.statefmt.types import from_arrow, to_arrow

UTC = dt.timezone.utc
TS_UTC = {"timestamp": {"unit": "us", "tz": "UTC"}}
WINDOW = {"struct": [{"name": "start", "type": "int64"}, {"name": "end", "type": "int64"}]}
ACC = {"struct": [{"name": "sum", "type": "float64"}, {"name": "count", "type": "int64"}]}

# Every kind of keyed state and a wide spread of value types.
KEYED_STATES = (
    KeyedStateDescriptor("count", "value", "int64"),
    KeyedStateDescriptor("flag", "value", "bool"),
    KeyedStateDescriptor("small", "value", "int8"),
    KeyedStateDescriptor("ratio", "value", "float32"),
    KeyedStateDescriptor("blob", "value", "binary"),
    KeyedStateDescriptor("day", "value", "date32"),
    KeyedStateDescriptor("seen", "value", TS_UTC),
    KeyedStateDescriptor("price", "value", {"decimal": {"precision": 10, "scale": 2}}),
    KeyedStateDescriptor("events", "list", "string"),
    KeyedStateDescriptor("matrix", "list", {"list": "int32"}),
    KeyedStateDescriptor("attrs", "map", {"list": "string"}, user_key_type="string"),
    KeyedStateDescriptor("total", "reducing", "float64", function="sum"),
    KeyedStateDescriptor("mean", "aggregating", ACC, function="avg"),
)


def keyed_section(states=KEYED_STATES, namespace_type=WINDOW) -> KeyedSection:
    return KeyedSection(
        key=(Field("user", "string"), Field("shard", "int32")),
        states=tuple(states),
        namespace_type=namespace_type,
    )


def keyed_rows(n: int = 40) -> pa.Table:
    """Rows for :func:`keyed_section`: every other row has a window, some values are absent."""
    section = keyed_section()
    rows = []
    for i in range(n):
        rows.append({
            "user": f"user-{i % 17}", "shard": i // 17,
            "namespace": None if i % 2 else {"start": i * 10, "end": i * 10 + 10},
            "count": i if i % 5 else None,
            "flag": i % 3 == 0,
            "small": i % 100 - 50,
            "ratio": i / 4,
            "blob": bytes([i % 256, 255 - i % 256]),
            "day": dt.date(2020, 1, 1) + dt.timedelta(days=i),
            "seen": dt.datetime(2024, 5, 1, tzinfo=UTC) + dt.timedelta(microseconds=i * 1_000_001),
            "price": Decimal(f"{i}.{i % 100:02d}"),
            "events": [f"e{j}" for j in range(i % 4)] if i % 7 else None,
            "matrix": [[j, None] for j in range(i % 3)],
            "attrs": [(f"k{j}", [f"v{j}", None]) for j in range(i % 3)],
            "total": float(i * 3),
            "mean": {"sum": float(i), "count": i + 1} if i % 6 else None,
        })
    schema = pa.schema(
        [pa.field(f.name, to_arrow(f.type)) for f in section.key]
        + [pa.field("namespace", to_arrow(WINDOW))]
        + [pa.field(s.name, to_arrow(s.column_type)) for s in section.states]
    )
    return pa.Table.from_pylist(rows, schema)


def timer_rows(n: int = 10) -> pa.Table:
    return pa.table({
        "user": [f"user-{i}" for i in range(n)],
        "shard": pa.array([i % 2 for i in range(n)], pa.int32()),
        "namespace": pa.array([{"start": i, "end": i + 5} for i in range(n)], to_arrow(WINDOW)),
        "timestamp": pa.array([1_700_000_000_000 + i for i in range(n)], pa.int64()),
        "domain": ["event" if i % 2 else "processing" for i in range(n)],
    })


def build_full_savepoint(path, parallelism: int = 3, max_parallelism: int = 16) -> Savepoint:
    """A savepoint with a keyed operator (all keyed kinds, namespace, timers) and
    list, union and broadcast operator state."""
    out = Location.of(str(path))
    proc = operator_id_for_uid("proc")
    section = keyed_section()
    files = write_keyed_files(out, proc, section, keyed_rows(), max_parallelism, parallelism)
    timers = write_keyed_files(out, proc, section, timer_rows(), max_parallelism, parallelism,
                               timers=True)
    section = KeyedSection(section.key, section.states, files, timers, section.namespace_type)

    src = operator_id_for_uid("src")
    offsets = OperatorState("offsets", "list", "int64")
    offsets = OperatorState("offsets", "list", "int64", (write_operator_state_file(
        out, src, offsets, pa.table({"subtask": pa.array([0, 0, 1], pa.int32()),
                                     "value": pa.array([10, 11, 20], pa.int64())})),))
    members = OperatorState("members", "union", "string")
    members = OperatorState("members", "union", "string", (write_operator_state_file(
        out, src, members, pa.table({"subtask": pa.array([0, 1], pa.int32()),
                                     "value": ["a", "b"]})),))
    rules_type = from_arrow(pa.struct([("pattern", pa.string()), ("weight", pa.int32())]))
    rules = OperatorState("rules", "broadcast", rules_type, key_type="string")
    rules = OperatorState("rules", "broadcast", rules_type, (write_operator_state_file(
        out, src, rules, pa.table({"key": ["r1", "r2"],
                                   "value": pa.array([{"pattern": "a*", "weight": 1},
                                                      {"pattern": "b?", "weight": None}],
                                                     to_arrow(rules_type))})),), "string")
    sp = Savepoint(
        savepoint_id=new_savepoint_id(),
        created_at=now_iso(),
        operators=(
            Operator(proc, "proc", parallelism, max_parallelism, section),
            Operator(src, "src", 2, 128, None, (offsets, members, rules)),
        ),
    )
    return commit(sp, out)


def build_native_savepoint(source: Savepoint, out, parallelism: int = 2) -> Savepoint:
    """*source*'s ``proc`` operator in statectl's RocksDB native format: each of *parallelism*
    subtasks restored by the RocksDB backend and snapshotted natively, committed as one."""
    from statectl.backends import RocksDBBackend, commit_snapshots

    backends = [RocksDBBackend.restore(source, "proc", subtask=i, parallelism=parallelism)
                for i in range(parallelism)]
    try:
        return commit_snapshots(out, [b.snapshot(out, format="rocksdb") for b in backends])
    finally:
        for b in backends:
            b.close()
