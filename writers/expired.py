"""TTL entries expired at a time, taken out of a keyed table's Arrow batches, columnar.

A TTL state's column sits beside its last-access timestamps (``<state>_ttl_ts``): a value
state's one per row, a list state's one per element, a map state's one per entry (same keys,
same order). :func:`prune_batch` removes every value, element or entry expired at *now* by
Flink's rule (:func:`statectl.statefmt.expiry.expired`, the one home of that rule) together with
its timestamp, and the rows none of whose states keeps a value (a key whose every state is
gone); everything else passes through as the same Arrow values. No per-value Python loop:
masks over the flattened timestamps, offsets rebuilt with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from statectl.statefmt.expiry import expired
from statectl.statefmt.model import TTL_SUFFIX

COLLECTIONS = ("list", "map")
MARK = "_statectl_removed"  # the column of the rows that carry a batch's counts, not state
MARK_TYPE = pa.list_(pa.int64())
MARK_DDL = f"{MARK} array<bigint>"


@dataclass(frozen=True)
class TtlState:
    """One TTL state of the table: its column, its kind (value, list or map) and its TTL (ms)."""

    name: str
    kind: str
    ttl: int

    @property
    def ttl_column(self) -> str:
        return self.name + TTL_SUFFIX


@dataclass(frozen=True)
class ExpiryRule:
    """What :func:`prune_batch` removes: the entries of *states* expired at *now*; a row none of
    *state_columns* (every state's value column) holds a value of afterwards is dropped."""

    states: tuple[TtlState, ...]
    state_columns: tuple[str, ...]
    now: int


def _whole(array: pa.Array) -> pa.Array:
    """*array* at offset 0 (a slice's children start where its values do)."""
    return pa.concat_arrays([array]) if array.offset else array


def _value(values: pa.Array, stamps: pa.Array, ttl: int, now: int):
    """A value state's column and timestamps, expired values null; and how many were removed."""
    gone = expired(stamps, ttl, now) & np.asarray(values.is_valid())
    if not gone.any():
        return values, stamps, 0
    rows = pa.array(np.arange(len(values)), mask=gone)  # a null index takes a null
    return values.take(rows), stamps.take(rows), int(gone.sum())


def _children(array: pa.Array) -> tuple[np.ndarray, list[pa.Array]]:
    """Each row's element count, and the list's elements (a map's keys and items) of its rows only."""
    offsets = np.asarray(array.offsets)
    start, stop = int(offsets[0]), int(offsets[-1])
    children = [array.keys, array.items] if isinstance(array, pa.MapArray) else [array.values]
    return np.diff(offsets), [c.slice(start, stop - start) for c in children]


def _collection(values: pa.Array, stamps: pa.Array, ttl: int, now: int):
    """A list or map state's column and timestamps without their expired elements or entries
    (a collection left empty by it is null: the state is gone); and how many were removed."""
    values, stamps = _whole(values), _whole(stamps)
    lengths, stamp_children = _children(stamps)
    gone = expired(stamp_children[-1], ttl, now)
    if not gone.any():
        return values, stamps, 0
    keep = pa.array(~gone)
    parents = np.repeat(np.arange(len(lengths)), lengths)
    kept = np.bincount(parents[~gone], minlength=len(lengths))
    emptied = (kept == 0) & (lengths > 0)
    offsets = pa.array(np.concatenate([[0], np.cumsum(kept)]).astype(np.int32))
    mask = pa.array(np.asarray(values.is_null()) | emptied)
    out = []
    for array, children in ((values, _children(values)[1]), (stamps, stamp_children)):
        kept_children = [c.filter(keep) for c in children]
        build = pa.MapArray.from_arrays if isinstance(array, pa.MapArray) else pa.ListArray.from_arrays
        out.append(build(offsets, *kept_children, type=array.type, mask=mask))
    return out[0], out[1], int(gone.sum())


def prune_batch(batch: pa.RecordBatch, rule: ExpiryRule) -> tuple[pa.RecordBatch, dict[str, int]]:
    """*batch* without what *rule* removes, and the entries removed per state (``rows``: the
    rows dropped because no state of theirs kept a value)."""
    columns = dict(zip(batch.schema.names, batch.columns))
    removed = {}
    for state in rule.states:
        values, stamps = columns[state.name], columns[state.ttl_column]
        if state.kind in COLLECTIONS:
            values, stamps, n = _collection(values, stamps, state.ttl, rule.now)
        else:
            values, stamps, n = _value(values, stamps, state.ttl, rule.now)
        columns[state.name], columns[state.ttl_column] = values, stamps
        removed[state.name] = n
    was_live, live = np.zeros(batch.num_rows, dtype=bool), np.zeros(batch.num_rows, dtype=bool)
    for name in rule.state_columns:
        was_live |= np.asarray(batch.column(name).is_valid())
        live |= np.asarray(columns[name].is_valid())
    out = pa.RecordBatch.from_arrays(list(columns.values()), schema=batch.schema)
    removed["rows"] = int((was_live & ~live).sum())
    return (out if live.all() else out.filter(pa.array(live))), removed


def marked(batch: pa.RecordBatch) -> pa.RecordBatch:
    """*batch* with a null :data:`MARK` column: rows of state."""
    return pa.RecordBatch.from_arrays([*batch.columns, pa.nulls(batch.num_rows, MARK_TYPE)],
                                      names=[*batch.schema.names, MARK])


def count_row(schema: pa.Schema, counts: list[int]) -> pa.RecordBatch:
    """One row of *schema*'s columns, every one null, with *counts* in :data:`MARK`: what a
    task removed, carried beside the rows it kept."""
    return pa.RecordBatch.from_arrays([*(pa.nulls(1, f.type) for f in schema), pa.array([counts], MARK_TYPE)],
                                      names=[*schema.names, MARK])
