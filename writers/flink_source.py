"""A Flink savepoint's operator as what the Flink writer takes: its tables, and a ``flink:``
binding naming its own serializers, so ``bootstrap --format flink`` (or ``rescale``) writes it again.

:func:`operator_binding` states the key, namespace and state serializers of an operator as a
spec's ``flink:`` mapping (no Spark; a serializer with no binding is refused here).
:func:`operator_spec` gives the operator as one spec entry whose inputs are named DataFrames:
lists and maps as rows (one per element or entry, lists ordered by position), REDUCING and
AGGREGATING states as value columns with their Flink kind, timers per domain and service,
operator list state with its ``subtask`` column. :func:`operator_data` parses that entry into an
:class:`~statectl.writers.definitions.OperatorData` over the DataFrames themselves.
"""

from __future__ import annotations

from statectl.statefmt.errors import FlinkEncodeError, UsageError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import key_java_type, type_text
from statectl.statefmt.flink.describe import FlinkOperatorInfo, FlinkSavepoint
from statectl.statefmt.flink.savepoint import read_split
from statectl.statefmt.flink.tables import key_fields, operator_list_schema, timer_service
from statectl.statefmt.model import TTL_SUFFIX

from .definitions import KeyedData, OperatorData
from .errors import SpecError
from .flink_binding import FlinkBinding, StateBinding, parse_binding
from .spec import _Parser


def _plain(t: T.FlinkType) -> tuple[T.FlinkType, bool]:
    return (t.inner, True) if isinstance(t, T.Ttl) else (t, False)


def _state_binding(t: T.FlinkType, ttl: bool, kind: str | None = None, key: T.FlinkType | None = None) -> dict:
    out = {"type": type_text(t)}
    if ttl:
        out["ttl"] = True
    if kind in ("reducing", "aggregating"):
        out["kind"] = kind
    if key is not None:
        out["key"] = type_text(key)
    return out


def operator_binding(op: FlinkOperatorInfo) -> dict:
    """The ``flink:`` mapping naming *op*'s serializers; one line naming the state when one
    has no binding the writer knows (Kryo, Avro, Row...), or the key when Flink's hash of it
    cannot be computed (POJO, Row, opaque keys)."""
    where = f"operator {op.label!r}"
    binding: dict = {}
    states: dict = {}
    header = op.keyed_header
    try:
        if header is not None:
            key_java_type(header.key, where)
            binding["key"] = type_text(header.key)
            namespaces = [m.namespace for m in header.states if m.kind != "timers"]
            if namespaces and isinstance(namespaces[0], T.TimeWindow):
                binding["namespace"] = type_text(namespaces[0])
            for meta in header.states:
                if meta.kind == "timers":
                    continue
                at = f"{where}, state {meta.name!r}"
                if meta.kind == "list":
                    element, ttl = _plain(meta.value.element)
                    states[meta.name] = _checked(lambda: _state_binding(element, ttl), at)
                elif meta.kind == "map":
                    value, ttl = _plain(meta.value.value)
                    states[meta.name] = _checked(lambda: _state_binding(value, ttl, key=meta.value.key), at)
                elif meta.kind in ("value", "reducing", "aggregating"):
                    value, ttl = _plain(meta.value)
                    states[meta.name] = _checked(lambda: _state_binding(value, ttl, meta.kind), at)
                else:
                    raise FlinkEncodeError(f"{at}: {meta.kind} state cannot be written to a Flink savepoint")
            services = {timer_service(m.name)[1] for m in header.states if m.kind == "timers"}
            if len(services) > 1:
                raise FlinkEncodeError(f"{where}: timers of several services ({', '.join(sorted(services))}) "
                                       "cannot be written to a Flink savepoint")
            if services:
                binding["timer_service"] = services.pop()
        for name, meta in op.operator_states.items():
            at = f"{where}, state {name!r}"
            key = meta.user_key if meta.kind == "broadcast" else None
            states[name] = _checked(lambda: _state_binding(meta.value, False, key=key), at)
    except FlinkEncodeError as e:
        raise UsageError(str(e)) from None
    if states:
        binding["states"] = states
    return binding


def _checked(make, where: str) -> dict:
    try:
        return make()
    except FlinkEncodeError as e:
        raise FlinkEncodeError(f"{where}: {e}") from None


def operator_spec(spark, fsp: FlinkSavepoint, op: FlinkOperatorInfo, parallelism: int | None = None,
                  max_parallelism: int | None = None) -> tuple[dict | None, dict]:
    """*op* of *fsp* as one spec entry (None when it holds no state) and the DataFrames its
    ``input`` names stand for, written with *parallelism* and *max_parallelism* (default: its own)."""
    from pyspark.sql import functions as F

    from statectl.readers import open_savepoint

    if op.uid is None:
        raise UsageError(f"operator {op.label} is known only by its operator id (a Flink 1.x _metadata holds "
                         "no uids); statectl rewrites only operators with a uid: restore the savepoint "
                         "in a Flink 2.x job with uids and take a new one")
    binding = operator_binding(op)
    reader = open_savepoint(spark, fsp.location.uri)
    frames: dict = {}

    def frame(df, name: str) -> str:
        name = f"{op.uid}--{name}"
        frames[name] = df
        return name

    entry = {"uid": op.uid, "parallelism": parallelism or op.parallelism,
             "max_parallelism": max_parallelism or op.max_parallelism}
    header = op.keyed_header
    if header is not None:
        keys = [f.name for f in key_fields(header.key)]
        table = reader.keyed(op.uid)
        ns = ["namespace"] if "namespace" in table.columns else []
        keyed: dict = {"key": keys, "states": []}
        if ns:
            keyed["namespace"] = "namespace"
        value_cols = []
        for meta in header.states:
            if meta.kind == "timers":
                continue
            # a TTL state's last-access timestamps travel beside its values, so they are kept
            ttl = f"{meta.name}{TTL_SUFFIX}" if f"{meta.name}{TTL_SUFFIX}" in table.columns else None
            if meta.kind == "list":
                rows = table.select(*keys, *ns, *([ttl] if ttl else []),
                                    F.posexplode(meta.name).alias("pos", "element"))
                if ttl:
                    rows = rows.withColumn(f"element{TTL_SUFFIX}", F.element_at(F.col(ttl), F.col("pos") + 1)) \
                        .drop(ttl)
                keyed["states"].append({"name": meta.name, "kind": "list", "column": "element",
                                        "order_by": "pos", "input": frame(rows, meta.name)})
            elif meta.kind == "map":
                rows = table.select(*keys, *ns, *([ttl] if ttl else []),
                                    F.explode(meta.name).alias("map_key", "map_value"))
                if ttl:
                    rows = rows.withColumn(f"map_value{TTL_SUFFIX}", F.element_at(F.col(ttl), F.col("map_key"))) \
                        .drop(ttl)
                keyed["states"].append({"name": meta.name, "kind": "map", "key_column": "map_key",
                                        "value_column": "map_value", "input": frame(rows, meta.name)})
            else:
                value_cols += [meta.name] + ([ttl] if ttl else [])
                keyed["states"].append({"name": meta.name, "kind": "value", "column": meta.name})
        if value_cols:
            keyed["input"] = frame(table.select(*keys, *ns, *value_cols), "value-states")
        if "timer_service" in binding:
            timers = reader.timers(op.uid)
            keyed["timers"] = [
                {"domain": domain, "column": "timestamp",
                 "input": frame(timers.where(F.col("domain") == domain).select(*keys, *ns, "timestamp"),
                                f"timers-{domain}")}
                for domain in ("event", "processing")]
        if not keyed["states"]:
            del keyed["states"]
        if "states" in keyed or "timers" in keyed:
            entry["keyed"] = keyed
    for name, meta in op.operator_states.items():
        if meta.kind == "broadcast":
            rows = reader.operator_state(op.uid, name).dropDuplicates(["key"])
            item = {"name": name, "key_column": "key", "value_column": "value"}
            entry.setdefault("broadcast_state", []).append({**item, "input": frame(rows, name)})
        else:  # with the subtask that holds each value (operator state is small: read on the driver)
            import pyarrow as pa

            table = pa.Table.from_batches([b for split in op.operator_splits for b in read_split(split, name)],
                                          schema=operator_list_schema(meta))
            if parallelism and parallelism != op.parallelism:  # dealt out again by the writer
                table = table.drop_columns(["subtask"])
            rows = spark.createDataFrame(table).coalesce(1)  # one partition: the values keep their order
            item = {"name": name, "kind": meta.kind, "column": "value"}
            entry.setdefault("operator_state", []).append({**item, "input": frame(rows, name)})
    if binding:
        entry["flink"] = binding
    if not {"keyed", "operator_state", "broadcast_state"} & set(entry):
        return None, {}
    return entry, frames


def on_flink_base(base, data: OperatorData) -> OperatorData:
    """*data* as it replaces the operator with its uid in the Flink savepoint *base* (if any):
    what its ``flink:`` binding leaves out (key, namespace, a state's type, TTL, Flink kind) and
    its max parallelism come from the base operator, so a job that restored the base restores it."""
    import dataclasses

    from statectl.statefmt.errors import UnknownOperatorError
    from statectl.statefmt.flink.model import flink_savepoint
    from statectl.statefmt.ids import operator_id_for_uid

    try:
        op = flink_savepoint(base).operator(operator_id_for_uid(data.uid))
    except UnknownOperatorError:
        return data
    try:
        known = parse_binding(operator_binding(op), f"operator {data.uid!r}")
    except UsageError:  # a state of the base has no binding: the spec's alone decides
        known = FlinkBinding()
    given = data.flink
    names = [s.name for s in data.keyed.states] if isinstance(data.keyed, KeyedData) else []
    names += [s.name for s in data.operator_states]
    states = {}
    for name in names:
        mine, theirs = (given.state(name) if given else StateBinding()), known.state(name)
        states[name] = StateBinding(mine.type or theirs.type, mine.ttl or theirs.ttl, mine.kind or theirs.kind,
                                    mine.key or theirs.key)
    binding = FlinkBinding((given and given.key) or known.key, (given and given.namespace) or known.namespace,
                           given.timer_service if given else known.timer_service, states)
    return dataclasses.replace(data, flink=binding, max_parallelism=data.max_parallelism or op.max_parallelism)


class _FrameParser(_Parser):
    """The spec parser with inputs that are DataFrames already, named in *frames*."""

    def __init__(self, frames: dict):
        super().__init__("")
        self.frames = frames

    def input(self, value, where: str):
        return None if value is None else self.frames[value]


def operator_data(entry: dict, frames: dict) -> OperatorData:
    """The spec *entry* (from :func:`operator_spec`) as an operator over its DataFrames."""
    parser = _FrameParser(frames)
    op = parser._quiet(parser.operator, entry, f"operator {entry['uid']!r}", None)
    if parser.errors:
        raise SpecError(*dict.fromkeys(parser.errors))
    return op


__all__ = ["operator_binding", "operator_spec", "operator_data", "on_flink_base"]
