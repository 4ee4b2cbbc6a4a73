"""A SQL operator's keyed entries moved to new key groups as they are: undecoded.

A SQL operator's key is a `BinaryRowData` whose key group is a hash of the row's own bytes
(:mod:`.rowdata_keys`), and none of its values depends on the key group. So a new max
parallelism needs no decoding at all: every entry of a canonical keyed stream or a native
RocksDB snapshot (:func:`~.savepoint.raw_entries`) keeps its key, namespace, map user key and value bytes
(RowKinds, TTL timestamps, RAW values, a timer's timestamp), and is given the key group its
key row's bytes hash to. :func:`regrouped_entries` makes them the entry rows the Flink stream
writer sorts and assembles (:func:`~.stream_write.row_schema`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError
from ..vocabulary import KeyedTable, StateKind
from .headers import KeyedHeader, StateMeta
from .rowdata import RowData
from .rowdata_keys import key_groups_at
from .stream_write import KEY, KEY_GROUP, user_key_column, value_column
from .streams import RawEntries, as_i32

TIMESTAMP_BYTES = 8  # a timer's key starts with its timestamp


def regrouped_entries(header: KeyedHeader, raw: dict[int, RawEntries], schema: pa.Schema,
                      max_parallelism: int) -> pa.Table:
    """The entry rows (of *schema*, :func:`~.stream_write.row_schema` of the header's states) of
    every state's entries in *raw*, each in the key group of its key row at *max_parallelism*."""
    if not isinstance(header.key, RowData):
        raise FlinkFormatError(f"a {header.key.describe()} key is not placed by its bytes")
    parts = [_state_rows(header.states[i], i, entries, schema, max_parallelism)
             for i, entries in sorted(raw.items()) if len(entries.key_starts)]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _state_rows(meta: StateMeta, state_id: int, raw: RawEntries, schema: pa.Schema,
                max_parallelism: int) -> pa.Table:
    """One state's entries as entry rows: its own columns set, every other state's null."""
    buf, starts, ends = raw.buf, raw.key_starts, raw.key_ends
    rows = starts + TIMESTAMP_BYTES if meta.kind == KeyedTable.TIMERS else starts
    row_lengths = as_i32(buf, rows)
    row_ends = rows + 4 + row_lengths
    if len(rows) and ((row_lengths < 0) | (row_ends > ends)).any():
        bad = int(rows[np.argmax((row_lengths < 0) | (row_ends > ends))])
        raise FlinkFormatError(f"{buf.source}: the key row at offset {buf.base + bad} runs past its key")
    columns = {KEY_GROUP: pa.array(key_groups_at(buf.arr, rows + 4, row_lengths, max_parallelism))}
    if meta.kind == StateKind.MAP:
        split = _namespace_ends(meta, buf, row_ends)
        columns[KEY] = buf.slices(starts, split)
        columns[user_key_column(state_id)] = buf.slices(split, ends)
    else:
        columns[KEY] = buf.slices(starts, ends)
    columns[value_column(state_id)] = buf.slices(raw.value_starts, raw.value_ends)
    n = len(starts)
    return pa.table([columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema)


def _namespace_ends(meta: StateMeta, buf, key_ends: np.ndarray) -> np.ndarray:
    """Where each entry's namespace (after its key row) ends: a map state's user key follows."""
    if meta.namespace.width is not None:
        return key_ends + meta.namespace.width
    return meta.namespace.column(buf, key_ends)[1]
