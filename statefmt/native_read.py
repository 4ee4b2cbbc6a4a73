"""A native (RocksDB) subtask snapshot as the rows of the canonical keyed and timer tables.

So native savepoints read into exactly the tables canonical ones do: the
keyed table's rows are the (key, namespace) pairs of the state column
families, merged in key order; the timers, the `timers` column family. Used
by readers (one Spark partition per subtask database); no Spark here.
"""

from __future__ import annotations

import heapq
import tempfile
from typing import Iterator

import pyarrow as pa

from .backends.codec import KeyLayout
from .backends.rocks import STATE_CF_PREFIX, TIMERS_CF, RocksTable, cf_options, open_snapshot_db, \
    read_native_range
from .canonical import keyed_schema, timers_schema
from .model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Operator, Savepoint
from .native import download, remove_tree, subtask_databases

BATCH_ROWS = 8192


def _key_row(layout: KeyLayout, op: Operator, kns: bytes) -> dict:
    kg, key, ns, _ = layout.split(kns)
    row = {KEY_GROUP_COLUMN: kg, **{f.name: v for f, v in zip(op.keyed.key, key)}}
    if op.keyed.namespace_type is not None:
        row[NAMESPACE_COLUMN] = ns
    return row


def _tagged(entries, index):
    for kns, value in entries:
        yield kns, index, value


def _keyed_rows(db, op: Operator, layout: KeyLayout, first: int, last: int) -> Iterator[dict]:
    from rocksdict import Rdict

    present = set(Rdict.list_cf(db.path(), cf_options()))
    states = [s for s in op.keyed.states if STATE_CF_PREFIX + s.name in present]
    scans = [_tagged(RocksTable(db.get_column_family(STATE_CF_PREFIX + s.name), s, layout)
                     .scan(first, last), i) for i, s in enumerate(states)]
    current, row = None, None
    for kns, i, value in heapq.merge(*scans, key=lambda e: (e[0], e[1])):
        if kns != current:
            if row is not None:
                yield row
            current, row = kns, _key_row(layout, op, kns)
        row[states[i].name] = value
    if row is not None:
        yield row


def _timer_rows(db, op: Operator, layout: KeyLayout, first: int, last: int) -> Iterator[dict]:
    for entry in read_native_range(db, (), layout, first, last):
        _, domain, kg, ts, key_ns = entry
        row = _key_row(layout, op, kg.to_bytes(2, "big") + key_ns)
        row.update(timestamp=ts, domain=domain)
        yield row


def read_subtask(sp: Savepoint, op: Operator, key_groups: tuple[int, int], timers: bool = False,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The keyed (or timer) rows of the database of *key_groups*, as Arrow batches of
    the canonical schema; files are verified as they are fetched."""
    files = subtask_databases(op)[tuple(key_groups)]
    schema = timers_schema(op.keyed) if timers else keyed_schema(op.keyed)
    layout = KeyLayout(op.keyed.key_types, op.keyed.namespace_type)
    tmp = tempfile.mkdtemp(prefix="statectl-native-read-")
    try:
        download(sp, files, tmp)
        db = open_snapshot_db(tmp)
        try:
            rows = (_timer_rows if timers else _keyed_rows)(db, op, layout, *key_groups)
            batch: list[dict] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= batch_rows:
                    yield pa.RecordBatch.from_pylist(batch, schema)
                    batch = []
            if batch:
                yield pa.RecordBatch.from_pylist(batch, schema)
        finally:
            db.close()
            del db
    finally:
        remove_tree(tmp)


__all__ = ["read_subtask", "TIMERS_CF"]
