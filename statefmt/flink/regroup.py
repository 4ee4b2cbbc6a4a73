"""A keyed operator's entries moved to new key groups as they are: values undecoded.

A key's group at a new max parallelism depends on the key alone, and no value depends on its
key group. So a new max parallelism needs only each entry's *key* decoded: every entry of a
canonical keyed stream or a native RocksDB snapshot (:func:`~.savepoint.raw_entries`) keeps its
key, namespace, map user key and value bytes (Kryo, POJO, Avro, CEP and other values statectl
cannot encode, TTL timestamps, RowKinds, a timer's timestamp), and is given the key group its
key hashes to:

* a SQL operator's key is a `BinaryRowData`, placed by a hash of the row's own bytes
  (:mod:`.rowdata_keys`);
* a DataStream operator's key (String, numbers, Boolean, Character, tuples of these) is decoded
  as a column (its type's ``column``, after the key-group prefix; a timer's after its timestamp)
  and placed by Flink's hash of its Java ``hashCode`` (:mod:`.keyhash`), as the writer places
  encoded keys.

:func:`regrouped_entries` makes them the entry rows the Flink stream writer sorts and assembles
(:func:`~.stream_write.row_schema`); :func:`pruned_entries` the same without the TTL entries
expired at a time (`prune --expired-at`, :mod:`.ttl_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, KeyTypeError
from ..vocabulary import KeyedTable, StateKind
from . import types as T
from .headers import KeyedHeader, StateMeta
from .keyhash import flink_key_groups
from .rowdata import RowData
from .rowdata_keys import key_groups_at
from .stream_write import KEY, KEY_GROUP, user_key_column, value_column
from .streams import RawEntries, as_i32
from .ttl_bytes import LiveEntries, live_entries

TIMESTAMP_BYTES = 8  # a timer's key starts with its timestamp


def key_placement(key: T.FlinkType, where: str):
    """How a key of *key* is placed from its bytes: None for a SQL key row (by the row's bytes),
    else the Java type :mod:`.keyhash` hashes it as; a key whose hashCode is not known here
    (POJO, Row, opaque) raises :class:`KeyTypeError`."""
    from .model import java_key_type

    return None if isinstance(key, RowData) else java_key_type(key, where)


def regrouped_entries(header: KeyedHeader, raw: dict[int, RawEntries], schema: pa.Schema,
                      max_parallelism: int) -> pa.Table:
    """The entry rows (of *schema*, :func:`~.stream_write.row_schema` of the header's states) of
    every state's entries in *raw*, each in the key group of its key at *max_parallelism*."""
    java = _placement(header)
    parts = [_state_rows(header, i, java, entries, schema, max_parallelism)
             for i, entries in sorted(raw.items()) if len(entries.key_starts)]
    return pa.concat_tables(parts) if parts else schema.empty_table()


@dataclass(frozen=True)
class Pruned:
    """Entry rows without the TTL entries expired, and what went: values, map entries or list
    elements per state (by name) and keyed rows, (key, namespace) pairs left without an entry."""

    table: pa.Table
    removed: dict[str, int]
    rows_removed: int


def pruned_entries(header: KeyedHeader, raw: dict[int, RawEntries], schema: pa.Schema, max_parallelism: int,
                   ttls: dict[str, int], now: int) -> Pruned:
    """:func:`regrouped_entries` without the entries of the TTL states *ttls* (state name: its
    time to live in ms) expired at *now* (:mod:`.ttl_bytes`)."""
    java = _placement(header)
    parts, removed, before, after = [], dict.fromkeys(ttls, 0), [], []
    for i, entries in sorted(raw.items()):
        meta = header.states[i]
        if not len(entries.key_starts):
            continue
        table = _state_rows(header, i, java, entries, schema, max_parallelism)
        keyed_row = meta.kind != KeyedTable.TIMERS  # a timer is no keyed row
        if keyed_row:
            before.append(table.column(KEY))
        if meta.name in ttls:
            live = live_entries(meta, entries, ttls[meta.name], now)
            removed[meta.name] += live.removed
            table = _kept(table, live, value_column(i))
        if keyed_row:
            after.append(table.column(KEY))
        parts.append(table)
    table = pa.concat_tables(parts) if parts else schema.empty_table()
    return Pruned(table, removed, _distinct(before) - _distinct(after))


def _kept(table: pa.Table, live: LiveEntries, values: str) -> pa.Table:
    """*table*'s rows *live* keeps, with its values where they changed."""
    table = table.filter(pa.array(live.keep))
    if live.values is None:
        return table
    i = table.schema.get_field_index(values)
    return table.set_column(i, table.schema.field(i), live.values)


def _distinct(keys: list[pa.ChunkedArray]) -> int:
    import pyarrow.compute as pc

    chunks = [c for k in keys for c in k.chunks]
    return pc.count_distinct(pa.chunked_array(chunks, pa.binary())).as_py() if chunks else 0


def _placement(header: KeyedHeader):
    try:
        return key_placement(header.key, "the stream's")
    except KeyTypeError:
        raise FlinkFormatError(f"a {header.key.describe()} key is not placed by its bytes") from None


def _state_rows(header: KeyedHeader, state_id: int, java, raw: RawEntries, schema: pa.Schema,
                max_parallelism: int) -> pa.Table:
    """One state's entries as entry rows: its own columns set, every other state's null."""
    meta = header.states[state_id]
    buf, starts, ends = raw.buf, raw.key_starts, raw.key_ends
    keys = starts + TIMESTAMP_BYTES if meta.kind == KeyedTable.TIMERS else starts
    groups, key_ends = _key_groups(header.key, java, buf, keys, ends, max_parallelism)
    columns = {KEY_GROUP: pa.array(groups, pa.int32())}
    if meta.kind == StateKind.MAP:
        split = _namespace_ends(meta, buf, key_ends)
        columns[KEY] = buf.slices(starts, split)
        columns[user_key_column(state_id)] = buf.slices(split, ends)
    else:
        columns[KEY] = buf.slices(starts, ends)
    columns[value_column(state_id)] = buf.slices(raw.value_starts, raw.value_ends)
    n = len(starts)
    return pa.table([columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema)


def _key_groups(key: T.FlinkType, java, buf, starts: np.ndarray, ends: np.ndarray,
                max_parallelism: int) -> tuple[np.ndarray, np.ndarray]:
    """The key group of the key at each of *starts* (its entry's key bytes end at *ends*) and
    where each key ends; a key running past its entry's key is one error naming the offset."""
    if java is None:  # a key row: its length, then its bytes
        lengths = as_i32(buf, starts)
        key_ends = starts + 4 + lengths
        _check_within(buf, starts, (lengths < 0) | (key_ends > ends), "key row")
        return key_groups_at(buf.arr, starts + 4, lengths, max_parallelism), key_ends
    values, key_ends = key.column(buf, starts, ends)  # reads are bounds-checked
    _check_within(buf, starts, key_ends > ends, "key")
    try:
        return flink_key_groups(values, java, max_parallelism), key_ends
    except KeyTypeError as e:
        raise FlinkFormatError(f"{buf.source}: {e}") from None


def _check_within(buf, starts: np.ndarray, bad: np.ndarray, what: str) -> None:
    if len(starts) and bad.any():
        at = int(starts[np.argmax(bad)])
        raise FlinkFormatError(f"{buf.source}: the {what} at offset {buf.base + at} runs past its key")


def _namespace_ends(meta: StateMeta, buf, key_ends: np.ndarray) -> np.ndarray:
    """Where each entry's namespace (after its key) ends: a map state's user key follows."""
    if meta.namespace.width is not None:
        return key_ends + meta.namespace.width
    return meta.namespace.column(buf, key_ends)[1]
