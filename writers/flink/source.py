"""A Flink savepoint's operator as what the Flink writer takes: its tables, and a ``flink:``
binding naming its own serializers, so ``rescale`` (or ``bootstrap --format flink``) writes it again.

:func:`operator_binding` states the key, namespace and state serializers of an operator as a
:class:`FlinkBinding` (no Spark; a serializer with no binding is refused here).
:func:`operator_data` gives the operator as an :class:`OperatorData` over DataFrames: lists and
maps as rows (one per element or entry, lists ordered by position), REDUCING and AGGREGATING
states as value columns with their Flink kind, timers per domain and service, operator list
state with its ``subtask`` column. :func:`operator_spec` states that operator as one spec entry
whose inputs are named DataFrames. A SQL operator's binding is its base header's types as read
and that header itself, which the writer copies (RowData has no binding text).
"""

from __future__ import annotations

import dataclasses

from statectl.statefmt.errors import FlinkEncodeError, UnknownOperatorError, UsageError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import key_java_type, parse_type, type_text
from statectl.statefmt.flink.describe import FlinkOperatorInfo, FlinkSavepoint
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.savepoint import read_split
from statectl.statefmt.flink.snapshot_write import copied_parts
from statectl.statefmt.flink.types.kryo import classes_note, writable
from statectl.statefmt.flink.tables import key_fields, operator_list_schema, timer_service
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import TTL_SUFFIX
from statectl.statefmt.vocabulary import KeyedTable, TimerDomain

from ..definitions import (BroadcastState, KeyedData, ListState, MapState, OperatorData, OperatorListState,
                           Timers, UnionListState, ValueState)
from ..errors import SpecError
from .binding import DEFAULT_TIMER_SERVICE, FLINK_KINDS, FlinkBinding, StateBinding

# --- the binding -------------------------------------------------------------------------------

def _plain(t: T.FlinkType) -> tuple[T.FlinkType, bool]:
    return (t.inner, True) if isinstance(t, T.Ttl) else (t, False)


def _bound(t: T.FlinkType) -> T.FlinkType:
    """The serializer the writer writes for *t*: the one *t*'s binding names; a type holding
    Kryo or Avro values (no binding names Kryo's registrations or an Avro schema) is written as
    read, those parts' snapshots as the base holds them."""
    copied = copied_parts(t)
    if not copied:
        return parse_type(type_text(t), "binding")
    for part in copied:
        why = writable(part) if isinstance(part, T.Kryo) else \
            (None if part.snapshot else "its serializer snapshot is not at hand")
        if why is not None:
            raise FlinkEncodeError(f"values of {part.describe()} cannot be written: {why}")
    return t


def _as_read(t: T.FlinkType) -> T.FlinkType:
    """A SQL operator's type as its base's header states it (its header is copied, not written)."""
    return t


def _state_binding(where: str, t: T.FlinkType, ttl: bool, kind: str | None = None,
                   key: T.FlinkType | None = None, bound=_bound) -> StateBinding:
    try:
        return StateBinding(bound(t), ttl, kind if kind in FLINK_KINDS else None,
                            bound(key) if key is not None else None)
    except FlinkEncodeError as e:
        raise FlinkEncodeError(f"{where}: {e}") from None


def _keyed_state_binding(where: str, meta, bound) -> StateBinding:
    at = f"{where}, state {meta.name!r}"
    if meta.kind == "list":
        return _state_binding(at, *_plain(meta.value.element), bound=bound)
    if meta.kind == "map":
        value, ttl = _plain(meta.value.value)
        return _state_binding(at, value, ttl, key=meta.value.key, bound=bound)
    if meta.kind in ("value", "reducing", "aggregating"):
        return _state_binding(at, *_plain(meta.value), meta.kind, bound=bound)
    raise FlinkEncodeError(f"{at}: {meta.kind} state cannot be written to a Flink savepoint")


def _keyed_binding(where: str, header) -> dict:
    """The key, namespace, timer service and states of a keyed operator's binding; a SQL
    operator's (a RowData key) its types as read, and its header, which the writer copies."""
    sql = isinstance(header.key, RowData)
    bound = _as_read if sql else _bound
    key_java_type(header.key, where)
    found: dict = {"key": bound(header.key), "states": {}, **({"header": header.raw} if sql else {})}
    namespaces = [m.namespace for m in header.states if m.kind != KeyedTable.TIMERS]
    if namespaces and (sql or isinstance(namespaces[0], T.TimeWindow)):
        found["namespace"] = bound(namespaces[0])
    states_ns = {n.describe() for n in namespaces} or {"VoidNamespace"}
    timers_ns = {m.namespace.describe() for m in header.states if m.kind == KeyedTable.TIMERS}
    if timers_ns - states_ns:  # e.g. an interval join's cleanup timers, in the side's String namespace
        raise FlinkEncodeError(f"{where}: timers in a namespace of their own ({', '.join(sorted(timers_ns))}) "
                               "cannot be written to a Flink savepoint yet")
    for meta in header.states:
        if meta.kind != KeyedTable.TIMERS:
            found["states"][meta.name] = _keyed_state_binding(where, meta, bound)
    services = {timer_service(m.name)[1] for m in header.states if m.kind == KeyedTable.TIMERS}
    if len(services) > 1:
        raise FlinkEncodeError(f"{where}: timers of several services ({', '.join(sorted(services))}) "
                               "cannot be written to a Flink savepoint")
    if services:
        found["timer_service"] = services.pop()
    return found


def _copied_keyed(where: str, header) -> dict:
    """The key and header of a keyed operator whose entries move as their bytes (a rescale's
    :class:`~.regroup.RegroupedKeyed`): its header, serializer snapshots and all, is copied."""
    key_java_type(header.key, where)
    return {"key": header.key, "states": {}, "header": header.raw}


def operator_binding(op: FlinkOperatorInfo, keyed_bytes: bool = False) -> FlinkBinding:
    """The binding naming *op*'s serializers; one line naming the state when one has no binding
    the writer knows (Kryo, Avro, Row...), or the key when Flink's hash of it cannot be computed
    (POJO, Row, opaque keys). A SQL operator's are its header's own, copied by the writer; so are
    any operator's with *keyed_bytes* (its keyed entries moved as their bytes: no keyed state is
    encoded, so none needs a binding)."""
    where = f"operator {op.label!r}"
    keyed = _copied_keyed if keyed_bytes else _keyed_binding
    try:
        found = keyed(where, op.keyed_header) if op.keyed_header is not None else {"states": {}}
        for name, meta in op.operator_states.items():
            key = meta.user_key if meta.kind == "broadcast" else None
            found["states"][name] = _state_binding(f"{where}, state {name!r}", meta.value, False, key=key)
    except FlinkEncodeError as e:
        raise UsageError(str(e)) from None
    return FlinkBinding(found.get("key"), found.get("namespace"),
                        found.get("timer_service", DEFAULT_TIMER_SERVICE), found["states"], found.get("header"),
                        op.keyed_native)


# --- the data ------------------------------------------------------------------------------------

def _list_rows(table, keys: list, meta, ttl: str | None):
    """A list state's rows: one per element, with its position (and TTL timestamp)."""
    from pyspark.sql import functions as F

    rows = table.select(*keys, *([ttl] if ttl else []), F.posexplode(meta.name).alias("pos", "element"))
    if ttl:
        rows = rows.withColumn(f"element{TTL_SUFFIX}", F.element_at(F.col(ttl), F.col("pos") + 1)).drop(ttl)
    return rows


def _map_rows(table, keys: list, meta, ttl: str | None):
    """A map state's rows: one per entry (and its TTL timestamp)."""
    from pyspark.sql import functions as F

    rows = table.select(*keys, *([ttl] if ttl else []), F.explode(meta.name).alias("map_key", "map_value"))
    if ttl:
        rows = rows.withColumn(f"map_value{TTL_SUFFIX}", F.element_at(F.col(ttl), F.col("map_key"))).drop(ttl)
    return rows


def _ref(op: FlinkOperatorInfo) -> OperatorRef:
    """How the reader names *op*: by its operator id, which every Flink operator has."""
    return OperatorRef(operator_id=op.operator_id)


def _keyed_data(reader, op: FlinkOperatorInfo, timers: bool, prune=None) -> KeyedData | None:
    """*op*'s keyed states and (with *timers*) its timers as column states over its tables,
    passed through a prune's rule (`writers/prune.py`) when given."""
    from pyspark.sql import functions as F

    header = op.keyed_header
    base_table = reader.keyed(_ref(op))
    table = base_table if prune is None else prune.keyed(base_table)
    key = tuple(f.name for f in key_fields(header.key))
    namespace = "namespace" if "namespace" in table.columns else None
    keys = [*key, *([namespace] if namespace else [])]  # every input's key columns
    states, value_cols = [], []
    for meta in header.states:
        if meta.kind == KeyedTable.TIMERS:
            continue
        # a TTL state's last-access timestamps travel beside its values, so they are kept
        ttl = f"{meta.name}{TTL_SUFFIX}" if f"{meta.name}{TTL_SUFFIX}" in table.columns else None
        if meta.kind == "list":
            states.append(ListState(meta.name, "element", _list_rows(table, keys, meta, ttl), order_by="pos"))
        elif meta.kind == "map":
            states.append(MapState(meta.name, "map_key", "map_value", _map_rows(table, keys, meta, ttl)))
        else:
            value_cols += [meta.name] + ([ttl] if ttl else [])
            states.append(ValueState(meta.name, meta.name))
    timer_data = ()
    if timers:
        all_timers = reader.timers(_ref(op))
        if prune is not None:
            all_timers = prune.timers(all_timers, base_table)
        timer_data = tuple(Timers(domain, "timestamp",
                                  all_timers.where(F.col("domain") == domain).select(*keys, "timestamp"))
                           for domain in TimerDomain.words())
    if not states and not timer_data:
        return None
    data = table.select(*keys, *value_cols) if value_cols else None
    return KeyedData(key, tuple(states), data, timer_data, namespace)


def _operator_states(spark, reader, op: FlinkOperatorInfo, parallelism: int | None) -> tuple:
    """*op*'s operator states over their tables: list and union states, then broadcast states."""
    import pyarrow as pa

    states, broadcast = [], []
    for name, meta in op.operator_states.items():
        if meta.kind == "broadcast":
            rows = reader.operator_state(_ref(op), name).dropDuplicates(["key"])
            broadcast.append(BroadcastState(name, "key", "value", rows))
            continue
        # with the subtask that holds each value (operator state is small: read on the driver)
        table = pa.Table.from_batches([b for split in op.operator_splits for b in read_split(split, name)],
                                      schema=operator_list_schema(meta))
        if parallelism and parallelism != op.parallelism:  # dealt out again by the writer
            table = table.drop_columns(["subtask"])
        rows = spark.createDataFrame(table).coalesce(1)  # one partition: the values keep their order
        states.append((OperatorListState if meta.kind == "list" else UnionListState)(name, "value", rows))
    return (*states, *broadcast)


def operator_data(reader, op: FlinkOperatorInfo, parallelism: int | None = None,
                  max_parallelism: int | None = None, keyed=None, prune=None) -> OperatorData | None:
    """*op* of the Flink savepoint *reader* reads (a `SavepointReader`) as an operator over its
    tables (None when it holds no state), written with *parallelism* and *max_parallelism*
    (default: its own); *keyed*: its keyed state given otherwise than as its tables (a
    rescale's :class:`~.regroup.RegroupedKeyed`); *prune*: a prune's rule its keyed tables pass
    through."""
    binding = operator_binding(op, keyed_bytes=keyed is not None)
    if keyed is None and op.keyed_header is not None:
        has_timers = any(m.kind == KeyedTable.TIMERS for m in op.keyed_header.states)
        keyed = _keyed_data(reader, op, has_timers, prune)
    states = _operator_states(reader.spark, reader, op, parallelism)
    if keyed is None and not states:
        return None
    data = OperatorData(op.uid, parallelism or op.parallelism, max_parallelism or op.max_parallelism, keyed,
                        states, binding, None if op.uid is not None else op.operator_id)
    data.check()
    return data


def on_flink_base(fsp: FlinkSavepoint, data: OperatorData) -> OperatorData:
    """*data* as it replaces the operator with its operator id in the Flink savepoint *fsp* (if any):
    what its ``flink:`` binding leaves out (key, namespace, a state's type, TTL, Flink kind) and
    its max parallelism come from the base operator, so a job that restored the base restores it."""
    try:
        op = fsp.operator(data.resolved_id)
    except UnknownOperatorError:
        return data
    try:
        known = operator_binding(op)
    except UsageError:  # a state of the base has no binding: the spec's alone decides
        _refuse_lost_states(op, data)
        known = FlinkBinding()
    given = data.flink
    if known.header is not None:
        return _on_sql_base(op, data, known)
    names = [s.name for s in data.keyed.states] if isinstance(data.keyed, KeyedData) else []
    names += [s.name for s in data.operator_states]
    states = {}
    for name in names:
        mine, theirs = (given.state(name) if given else StateBinding()), known.state(name)
        states[name] = StateBinding(mine.type or theirs.type, mine.ttl or theirs.ttl, mine.kind or theirs.kind,
                                    mine.key or theirs.key)
    binding = FlinkBinding((given and given.key) or known.key, (given and given.namespace) or known.namespace,
                           given.timer_service if given else known.timer_service, states,
                           native=op.keyed_native)
    return dataclasses.replace(data, flink=binding, max_parallelism=data.max_parallelism or op.max_parallelism)


def _refuse_lost_states(op: FlinkOperatorInfo, data: OperatorData) -> None:
    """One line when *data*, replacing *op*, would lose a state of *op* the writer cannot write
    (Kryo, an opaque serializer...): the spec leaves it out, or gives it without its Flink type
    (its bytes would be written under another serializer)."""
    given = set(s.name for s in data.keyed.states) if isinstance(data.keyed, KeyedData) else set()
    given |= {s.name for s in data.operator_states}
    where = f"operator {op.label!r}"
    metas = [m for m in (op.keyed_header.states if op.keyed_header is not None else ())
             if m.kind != KeyedTable.TIMERS]
    for meta in [*metas, *op.operator_states.values()]:
        try:
            if meta in metas:
                _keyed_state_binding(where, meta, _bound)
            else:
                _state_binding(where, meta.value, False, key=meta.user_key if meta.kind == "broadcast" else None)
        except FlinkEncodeError:
            if meta.name in given and data.flink is not None and data.flink.state(meta.name).type is not None:
                continue  # written with the type the spec declares for it
            how = "gives it without its flink: type" if meta.name in given else "leaves it out"
            classes = classes_note(meta.value)
            hint = f" ({classes.removeprefix('holds ')})" if classes else ""
            raise SpecError(f"{where}, state {meta.name!r}: its values ({meta.value.describe()}) cannot be "
                            f"written again{hint}, and the spec, which replaces the operator, {how}: they would "
                            "be lost; leave the operator out of the spec to keep it as it is") from None


def _on_sql_base(op: FlinkOperatorInfo, data: OperatorData, known: FlinkBinding) -> OperatorData:
    """*data* replacing a SQL operator: written with the base's header and types (a RowData
    serializer has no binding text, and the job restores only its own snapshots)."""
    if data.flink is not None and data.flink != FlinkBinding():
        raise SpecError(f"operator {data.label!r}: a SQL operator's serializers are its base's (copied); "
                        "leave out its flink: binding")
    return dataclasses.replace(data, flink=known, max_parallelism=data.max_parallelism or op.max_parallelism)




# --- as a spec entry -----------------------------------------------------------------------------

def _binding_spec(binding: FlinkBinding) -> dict:
    """*binding* as a spec's ``flink:`` mapping."""
    out: dict = {}
    if binding.key is not None:
        out["key"] = type_text(binding.key)
    if binding.namespace is not None:
        out["namespace"] = type_text(binding.namespace)
    if binding.timer_service != DEFAULT_TIMER_SERVICE:
        out["timer_service"] = binding.timer_service
    states = {}
    for name, b in binding.states.items():
        states[name] = {"type": type_text(b.type), **({"ttl": True} if b.ttl else {}),
                        **({"kind": b.kind} if b.kind else {}), **({"key": type_text(b.key)} if b.key else {})}
    return {**out, **({"states": states} if states else {})}


def _state_spec(state, frame) -> dict:
    """A column state (or timers) as a spec item; its own input named by *frame*."""
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    item = {k: v for k, v in fields.items() if k != "data" and v is not None}
    kind = {ValueState: "value", ListState: "list", MapState: "map", OperatorListState: "list",
            UnionListState: "union"}.get(type(state))
    if kind is not None:
        item = {"name": item.pop("name"), "kind": kind, **item}
    if state.data is not None:
        item["input"] = frame(state.data, getattr(state, "name", None) or f"timers-{state.domain}")
    return item


def operator_spec(spark, fsp: FlinkSavepoint, op: FlinkOperatorInfo, parallelism: int | None = None,
                  max_parallelism: int | None = None) -> tuple[dict | None, dict]:
    """:func:`operator_data` as one spec entry (None when it holds no state) and the DataFrames
    its ``input`` names stand for."""
    from statectl.readers import open_savepoint

    data = operator_data(open_savepoint(spark, fsp.location.uri), op, parallelism, max_parallelism)
    if data is None:
        return None, {}
    frames: dict = {}

    def frame(df, name: str) -> str:
        frames[f"{data.label}--{name}"] = df
        return f"{data.label}--{name}"

    identity = {"uid": data.uid} if data.uid is not None else {"operator_id": data.operator_id}
    entry: dict = {**identity, "parallelism": data.parallelism, "max_parallelism": data.max_parallelism}
    if data.keyed is not None:
        keyed = data.keyed
        entry["keyed"] = {"key": list(keyed.key), **({"namespace": keyed.namespace} if keyed.namespace else {}),
                          **({"states": [_state_spec(s, frame) for s in keyed.states]} if keyed.states else {}),
                          **({"input": frame(keyed.data, "value-states")} if keyed.data is not None else {}),
                          **({"timers": [_state_spec(t, frame) for t in keyed.timers]} if keyed.timers else {})}
    for state in data.operator_states:
        section = "broadcast_state" if isinstance(state, BroadcastState) else "operator_state"
        entry.setdefault(section, []).append(_state_spec(state, frame))
    if data.flink.header is None:  # a SQL operator's serializers come from its base (no binding text)
        entry["flink"] = _binding_spec(data.flink)
    return entry, frames
