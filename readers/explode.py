"""Collections flattened into rows (`read --explode`): one row per list element or map entry.

A list state becomes key column(s), [namespace], ``index`` (0-based) and the element under the
state's name; a map state, ``map_key`` and the value. A Flink TTL state's ``<state>_ttl_ts``
is flattened alongside, so every element keeps its timestamp. Empty and null collections give
no rows. The same columns from a Spark DataFrame (:func:`explode_frame`) and from an Arrow
table of the local engine (:func:`explode_table`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.errors import UsageError
from statectl.statefmt.model import NAMESPACE_COLUMN, TTL_SUFFIX, Operator
from statectl.statefmt.vocabulary import StateKind

from .resolve import KEYED, TableChoice


def exploded_state(choice: TableChoice):
    """The one list or map state *choice* reads, for ``--explode`` (checked before any work)."""
    op = choice.operator
    if choice.kind != KEYED:
        raise UsageError("--explode flattens a keyed list or map state; timers and operator state are rows already")
    names = list(choice.states) or [s.name for s in op.keyed.states
                                     if s.kind in (StateKind.LIST, StateKind.MAP)]
    if len(names) != 1:
        raise UsageError(f"--explode flattens one list or map state: choose it with --state "
                         f"(operator {op.label} has {', '.join(names) or 'none'})")
    state = op.keyed.state(names[0])
    if state.kind not in (StateKind.LIST, StateKind.MAP):
        raise UsageError(f"--explode flattens a list or map state; {state.name!r} is a {state.kind} state")
    return state


def _keys(op: Operator) -> list[str]:
    return op.keyed.key_names + ([NAMESPACE_COLUMN] if op.keyed.namespace_type is not None else [])


def explode_frame(df, op: Operator, state):
    from pyspark.sql import functions as F

    ttl = f"{state.name}{TTL_SUFFIX}" if f"{state.name}{TTL_SUFFIX}" in df.columns else None
    keys = [F.col(f"`{k}`") for k in _keys(op)]
    extra = [F.col(f"`{ttl}`").alias("_ttl")] if ttl else []
    if state.kind == StateKind.LIST:
        out = df.select(*keys, *extra, F.posexplode(F.col(f"`{state.name}`")).alias("index", state.name))
        if ttl:
            out = out.withColumn(ttl, F.element_at("_ttl", F.col("index") + 1))
    else:
        out = df.select(*keys, *extra, F.explode(F.col(f"`{state.name}`")).alias("map_key", state.name))
        if ttl:
            out = out.withColumn(ttl, F.element_at("_ttl", F.col("map_key")))
    return out.drop("_ttl") if ttl else out


def _as_list(column) -> pa.ListArray:
    """A list column as is; a map column as the list of its entries (key, value)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_map(column.type):
        return pa.ListArray.from_arrays(column.offsets, column.values, mask=column.is_null())
    return column


def explode_table(table: pa.Table, op: Operator, state) -> pa.Table:
    column = _as_list(table.column(state.name))
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    parents = np.repeat(np.arange(len(column)), lengths)
    flat = pc.list_flatten(column)
    out = {k: table.column(k).take(pa.array(parents)) for k in _keys(op)}
    if state.kind == StateKind.LIST:
        starts = np.cumsum(lengths) - lengths
        out["index"] = pa.array(np.arange(len(flat)) - np.repeat(starts, lengths), pa.int32())
        out[state.name] = flat
    else:
        out["map_key"], out[state.name] = flat.field(0), flat.field(1)
    ttl = f"{state.name}{TTL_SUFFIX}"
    if ttl in table.column_names:
        stamps = pc.list_flatten(_as_list(table.column(ttl)))
        out[ttl] = stamps if state.kind == StateKind.LIST else stamps.field(1)
    return pa.table(out)
