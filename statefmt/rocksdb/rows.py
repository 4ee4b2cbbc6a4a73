"""Entries keyed by ``key group ‖ key ‖ namespace`` as the rows of the canonical tables.

The one place entries become rows: the keyed table's rows are the (key,
namespace) pairs of every state's entries, merged in key order; a timer
entry is one row of the timer table. A job-side backend snapshots its tables
to canonical files with them, and :func:`read_subtask` reads a subtask's
RocksDB snapshot into the canonical tables' batches (one Spark partition per
subtask database in `statectl.readers`), so both formats read into the same tables.
"""

from __future__ import annotations

import heapq
from typing import Iterable, Iterator

import pyarrow as pa

from ..canonical import keyed_schema, timers_schema
from ..model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Field, KeyedSection, Operator, Savepoint
from .codec import KeyLayout, key_group_prefix
from .database import opened_snapshot, read_entries
from .files import subtask_databases

BATCH_ROWS = 8192


class RowMaker:
    """Canonical rows of one keyed section from its entries."""

    def __init__(self, layout: KeyLayout, key: Iterable[Field], has_namespace: bool):
        self.layout = layout
        self.key_names = [f.name for f in key]
        self.has_namespace = has_namespace

    def key_row(self, kns: bytes) -> dict:
        """The key group, key columns and namespace of ``key group ‖ key ‖ namespace``."""
        kg, key, ns, _ = self.layout.split(kns)
        row = {KEY_GROUP_COLUMN: kg, **dict(zip(self.key_names, key))}
        if self.has_namespace:
            row[NAMESPACE_COLUMN] = ns
        return row

    def keyed_rows(self, scans: dict[str, Iterable[tuple[bytes, object]]]) -> Iterator[dict]:
        """One row per (key, namespace): each state's ``(kns, value)`` scan (in byte order)
        merged into its column."""
        names = list(scans)
        tagged = [_tagged(scan, i) for i, scan in enumerate(scans.values())]
        current, row = None, None
        for kns, i, value in heapq.merge(*tagged, key=lambda e: (e[0], e[1])):
            if kns != current:
                if row is not None:
                    yield row
                current, row = kns, self.key_row(kns)
            row[names[i]] = value
        if row is not None:
            yield row

    def timer_rows(self, timers: Iterable[tuple[int, str, int, bytes]]) -> Iterator[dict]:
        """One row per timer ``(kg, domain, ts, key_ns)``."""
        for kg, domain, ts, key_ns in timers:
            row = self.key_row(key_group_prefix(kg) + key_ns)
            row.update(timestamp=ts, domain=domain)
            yield row

    @classmethod
    def of(cls, section: KeyedSection) -> "RowMaker":
        return cls(KeyLayout(section.key_types, section.namespace_type), section.key,
                   section.namespace_type is not None)


def _tagged(scan, index: int):
    for kns, value in scan:
        yield kns, index, value


def read_subtask(sp: Savepoint, op: Operator, key_groups: tuple[int, int], timers: bool = False,
                 batch_rows: int = BATCH_ROWS, span: tuple[int, int] | None = None) -> Iterator[pa.RecordBatch]:
    """The keyed (or timer) rows of the database of *key_groups* (only those of the key
    groups of *span*, if given), as Arrow batches of the canonical schema, in key-group
    order; files are verified as they are fetched."""
    section = op.keyed
    schema = timers_schema(section) if timers else keyed_schema(section)
    rows = RowMaker.of(section)
    first, last = key_groups
    if span is not None:
        first, last = max(first, span[0]), min(last, span[1])
    with opened_snapshot(sp, subtask_databases(op)[tuple(key_groups)]) as db:
        if timers:
            entries = read_entries(db, (), rows.layout, first, last)
            found = rows.timer_rows((kg, domain, ts, key_ns) for _, domain, kg, ts, key_ns in entries)
        else:
            scans = {s.name: _state_scan(db, s, rows.layout, first, last) for s in section.states}
            found = rows.keyed_rows(scans)
        batch: list[dict] = []
        for row in found:
            batch.append(row)
            if len(batch) >= batch_rows:
                yield pa.RecordBatch.from_pylist(batch, schema)
                batch = []
        if batch:
            yield pa.RecordBatch.from_pylist(batch, schema)


def _state_scan(db, state, layout: KeyLayout, first: int, last: int):
    entries = read_entries(db, (state,), layout, first, last, timers=False)
    return ((kns, value) for _, _, kns, value in entries)
