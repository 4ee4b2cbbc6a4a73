"""Flink keyed, timer and operator state as Arrow tables, statectl's table contract.

* keyed: ``_key_group``, key column(s), ``namespace`` (absent for
  VoidNamespace), one column per state, and ``<state>_ttl_ts`` beside each TTL
  state (the last-access timestamps, epoch ms, in the same shape as the value).
* timers: ``_key_group``, key column(s), ``namespace``, ``timestamp``,
  ``domain`` (event|processing), ``service``.
* operator list and union: ``subtask``, ``value``; broadcast: ``key``, ``value``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, TTL_SUFFIX
from ..vocabulary import KeyedTable, TimerDomain
from .headers import StateMeta
from .rowdata import RowData
from .streams import StateRows
from . import types as T
from .types.buffer import Extents

TIMER_PREFIX = "_timer_state/"


# --- columns and schemas ----------------------------------------------------------------

def key_fields(key: T.FlinkType) -> list[pa.Field]:
    """One column for a scalar key, one per field for a Tuple, POJO or Row key."""
    if isinstance(key, (T.Tuple, T.Pojo, T.Row, RowData)):
        return [pa.field(f.name, f.type) for f in key.arrow()]
    return [pa.field("key", key.arrow())]


def namespace_field(namespaces: list[T.FlinkType]) -> pa.Field | None:
    kinds = {n.describe() for n in namespaces}
    if not namespaces or kinds <= {"VoidNamespace", "GlobalWindow"}:
        return None
    if len(kinds) == 1 and isinstance(namespaces[0], (T.TimeWindow, T.Scalar, T.String)):
        return pa.field(NAMESPACE_COLUMN, namespaces[0].arrow())  # a SQL window slice's end, a join's side
    return pa.field(NAMESPACE_COLUMN, pa.binary())


def _split_ttl_type(t: pa.DataType) -> tuple[pa.DataType, pa.DataType | None]:
    """The user value type and the timestamp type of a (possibly TTL-wrapped) column type."""
    def is_ttl(x):
        return pa.types.is_struct(x) and x.num_fields == 2 and x.field(0).name == T.TTL_FIELD
    if is_ttl(t):
        return t.field(1).type, pa.int64()
    if pa.types.is_map(t) and is_ttl(t.item_type):
        return pa.map_(t.key_type, t.item_type.field(1).type), pa.map_(t.key_type, pa.int64())
    if pa.types.is_list(t) and is_ttl(t.value_type):
        return pa.list_(t.value_type.field(1).type), pa.list_(pa.int64())
    return t, None


def state_fields(meta: StateMeta) -> list[pa.Field]:
    value, ttl = _split_ttl_type(state_arrow_type(meta))
    fields = [pa.field(meta.name, value)]
    if ttl is not None:
        fields.append(pa.field(meta.name + TTL_SUFFIX, ttl))
    return fields


def state_arrow_type(meta: StateMeta) -> pa.DataType:
    """The column type of a keyed state: its value; a list state's List; a map state's Map."""
    return meta.value.arrow()


def keyed_states(states: tuple[StateMeta, ...]) -> list[StateMeta]:
    return [s for s in states if s.kind != KeyedTable.TIMERS]


def timer_states(states: tuple[StateMeta, ...]) -> list[StateMeta]:
    return [s for s in states if s.kind == KeyedTable.TIMERS]


def keyed_schema(key: T.FlinkType, states: tuple[StateMeta, ...]) -> pa.Schema:
    kept = keyed_states(states)
    fields = [pa.field(KEY_GROUP_COLUMN, pa.int32(), nullable=False)] + key_fields(key)
    ns = namespace_field([s.namespace for s in kept])
    if ns is not None:
        fields.append(ns)
    for s in kept:
        fields += state_fields(s)
    return pa.schema(fields)


def timers_schema(key: T.FlinkType, states: tuple[StateMeta, ...]) -> pa.Schema:
    fields = [pa.field(KEY_GROUP_COLUMN, pa.int32(), nullable=False)] + key_fields(key)
    ns = namespace_field([s.namespace for s in timer_states(states)])
    if ns is not None:
        fields.append(ns)
    return pa.schema(fields + [pa.field("timestamp", pa.int64(), nullable=False),
                               pa.field("domain", pa.string(), nullable=False),
                               pa.field("service", pa.string(), nullable=False)])


def timer_service(name: str) -> tuple[str, str]:
    """(domain, service) of a timer state name such as ``_timer_state/event_user-timers``."""
    rest = name[len(TIMER_PREFIX):] if name.startswith(TIMER_PREFIX) else name
    domain, _, service = rest.partition("_")
    return (TimerDomain.EVENT if domain == TimerDomain.EVENT else TimerDomain.PROCESSING), (service or rest)


# --- keys and namespaces from the row identity -------------------------------------------

def decode_keys(key: T.FlinkType, namespace: T.FlinkType | None, keyns: Extents,
                ns_field: pa.Field | None) -> list[pa.Array]:
    """Key column(s) and, when *ns_field* is set, the namespace column of each key + namespace.

    *namespace* None: the rows' namespaces are of several types (kept as bytes).
    """
    buf, starts, ends = keyns.buf, keyns.starts, keyns.ends
    ns_width = None if namespace is None else namespace.width
    limits = ends - ns_width if ns_width is not None else None
    keys, key_ends = key.column(buf, starts, limits)
    if isinstance(keys, pa.StructArray):
        columns = [keys.field(i) for i in range(keys.type.num_fields)]
    else:
        columns = [keys]
    if ns_field is not None:
        if namespace is None or pa.types.is_binary(ns_field.type):
            columns.append(buf.slices(key_ends, ends))
        else:
            ns, _ = namespace.column(buf, key_ends, ends)
            columns.append(ns)
    return columns


# --- tables -------------------------------------------------------------------------------

def _take_or_null(values: pa.Array, positions: np.ndarray) -> pa.Array:
    return values.take(pa.array(positions, mask=positions < 0))


def _split_ttl(values: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    t = values.type
    value_type, ttl_type = _split_ttl_type(t)
    if ttl_type is None:
        return values, None
    if pa.types.is_struct(t):
        return _struct_field(values, 1), _struct_field(values, 0)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    items = values.items if pa.types.is_map(t) else values.values
    inner_v, inner_ts = _struct_field(items, 1), _struct_field(items, 0)
    offsets = values.offsets
    mask = values.is_null()
    if pa.types.is_map(t):
        return (pa.MapArray.from_arrays(offsets, values.keys, inner_v, mask=mask),
                pa.MapArray.from_arrays(offsets, values.keys, inner_ts, mask=mask))
    return (pa.ListArray.from_arrays(offsets, inner_v, mask=mask),
            pa.ListArray.from_arrays(offsets, inner_ts, mask=mask))


def _struct_field(struct: pa.Array, i: int) -> pa.Array:
    """A struct's field with the struct's own nulls applied."""
    import pyarrow.compute as pc

    return pc.struct_field(struct, [i])


def _rows_of(kept: list[StateMeta], rows: dict[str, StateRows], source: str
             ) -> tuple[Extents, np.ndarray, dict[str, np.ndarray] | None]:
    """The table's rows: every key + namespace of any state, ordered by key group, then
    first appearance; their key groups; and per state, the position of each row's value
    (-1: none). Positions are None when every state has the very same rows in that order
    (the common case, found without hashing)."""
    import pyarrow.compute as pc  # here, not at the top: `info` loads this module and decodes no rows

    first = rows[kept[0].name]
    same = all(rows[s.name].keyns.same(first.keyns) for s in kept[1:])
    if same and (len(first.key_groups) < 2 or (np.diff(first.key_groups) >= 0).all()):
        return first.keyns, first.key_groups.astype(np.int32, copy=False), None
    all_keyns = pa.concat_arrays([rows[s.name].keyns.binary() for s in kept])
    all_groups = np.concatenate([rows[s.name].key_groups for s in kept])
    encoded = pc.dictionary_encode(all_keyns)
    ids = encoded.indices.to_numpy(zero_copy_only=False)
    n_rows = len(encoded.dictionary)
    groups = np.empty(n_rows, dtype=np.int32)
    groups[ids] = all_groups
    order = np.lexsort((np.arange(n_rows), groups))  # by key group, then first appearance
    rank = np.empty(n_rows, dtype=np.int64)
    rank[order] = np.arange(n_rows)
    positions, at = {}, 0
    for s in kept:
        n = len(rows[s.name].keyns)
        p = np.full(n_rows, -1, dtype=np.int64)
        p[rank[ids[at:at + n]]] = np.arange(n)
        positions[s.name] = p
        at += n
    return Extents.of(encoded.dictionary.take(pa.array(order)), source), groups[order], positions


def keyed_table(key: T.FlinkType, states: tuple[StateMeta, ...], rows: dict[str, StateRows],
                schema: pa.Schema, source: str) -> pa.Table:
    kept = [s for s in keyed_states(states) if s.name in rows and len(rows[s.name].keyns)]
    if not kept:
        return schema.empty_table()
    keyns, groups, positions = _rows_of(kept, rows, source)
    n_rows = len(keyns)
    kinds = {s.namespace.describe() for s in kept}
    namespace = kept[0].namespace if len(kinds) == 1 else None
    ns_field = schema.field(NAMESPACE_COLUMN) if NAMESPACE_COLUMN in schema.names else None
    columns = {KEY_GROUP_COLUMN: pa.array(groups)}
    key_arrays = decode_keys(key, namespace, keyns, ns_field)
    names = [f.name for f in key_fields(key)] + ([NAMESPACE_COLUMN] if ns_field is not None else [])
    columns.update(zip(names, key_arrays))
    for s in kept:
        values = rows[s.name].values
        value, ttl = _split_ttl(values if positions is None else _take_or_null(values, positions[s.name]))
        columns[s.name] = value
        if ttl is not None:
            columns[s.name + TTL_SUFFIX] = ttl
    return _conform(columns, schema, n_rows)


def timers_table(key: T.FlinkType, states: tuple[StateMeta, ...], rows: dict[str, StateRows],
                 schema: pa.Schema) -> pa.Table:
    import pyarrow.compute as pc

    parts = []
    ns_field = schema.field(NAMESPACE_COLUMN) if NAMESPACE_COLUMN in schema.names else None
    for s in timer_states(states):
        r = rows.get(s.name)
        if r is None or not len(r.keyns):
            continue
        domain, service = timer_service(s.name)
        columns = {KEY_GROUP_COLUMN: pa.array(r.key_groups.astype(np.int32))}
        names = [f.name for f in key_fields(key)] + ([NAMESPACE_COLUMN] if ns_field is not None else [])
        columns.update(zip(names, decode_keys(key, s.namespace, r.keyns, ns_field)))
        n = len(r.keyns)
        columns["timestamp"] = r.values
        columns["domain"] = pa.array([domain] * n, pa.string())
        columns["service"] = pa.array([service] * n, pa.string())
        parts.append(_conform(columns, schema, n))
    if not parts:
        return schema.empty_table()
    table = pa.concat_tables(parts)
    return table.take(pc.sort_indices(table, [(KEY_GROUP_COLUMN, "ascending")]))


def _conform(columns: dict[str, pa.Array], schema: pa.Schema, n: int) -> pa.Table:
    arrays = []
    for f in schema:
        a = columns.get(f.name)
        arrays.append(pa.nulls(n, f.type) if a is None else a.cast(f.type) if a.type != f.type else a)
    return pa.Table.from_arrays(arrays, schema=schema)


def operator_list_schema(meta: StateMeta) -> pa.Schema:
    return pa.schema([pa.field("subtask", pa.int32(), nullable=False), pa.field("value", meta.value.arrow())])


def broadcast_schema(meta: StateMeta) -> pa.Schema:
    return pa.schema([pa.field("key", meta.user_key.arrow()), pa.field("value", meta.value.arrow())])
