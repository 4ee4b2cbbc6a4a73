"""A Flink savepoint as statectl's :class:`Savepoint` model, so every reading command
and `readers` take it unchanged.

Operators are marked with the physical format :data:`Format.FLINK`; keyed states carry
their serializer class, TTL and size; data files their size and no checksum.
Types are the Arrow types of `tables.py` in statectl's type grammar
(:func:`spark_arrow_type` says how the few Flink types without a statectl type
are presented). The model carries the Flink description itself
(:func:`flink_savepoint`), for the readers that decode splits and the writers.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from ..fs import Location
from ..model import (NAMESPACE_COLUMN, DataFile, Field, FileRef, KeyedSection,
                     KeyedStateDescriptor, Operator, OperatorState, Savepoint, UnreadablePart)
from ..types import from_arrow
from ..vocabulary import COORDINATOR_KIND, Format
from . import tables as TB
from .describe import FlinkOperatorInfo, FlinkSavepoint
from .types.kryo import classes_note
from .lineage import lineage_roots
from .savepoint import open_flink_savepoint
from .streamio import METADATA


def flink_savepoint(sp: Savepoint) -> FlinkSavepoint:
    """The Flink description the model *sp* carries (opened from its location for a model
    made without one)."""
    if isinstance(sp.description, FlinkSavepoint):
        return sp.description
    return open_flink_savepoint(sp.location)


def load_flink(location: str | Location, data: bytes | None = None) -> Savepoint:
    """The :class:`Savepoint` model of the Flink savepoint or checkpoint at *location*,
    carrying its Flink description (*data*: its `_metadata`'s bytes, if read already)."""
    fsp = open_flink_savepoint(location, data)
    mtime = fsp.location.child(METADATA).info().mtime
    created = mtime.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if mtime else ""
    return Savepoint(
        savepoint_id=fsp.savepoint_id,
        created_at=created,
        operators=tuple(_operator(fsp.location, op, fsp.lineage) for op in fsp.operators),
        lineage=fsp.lineage,
        format_version=fsp.metadata.version,
        location=fsp.location.uri,
        description=fsp,
    )


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """*t* as Spark can take it: timestamps in microseconds, times of day as int64
    nanoseconds, a null type (Tuple0, Void) as binary; nested types likewise."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_time(t):
        return pa.int64()
    if pa.types.is_null(t):
        return pa.binary()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type), spark_arrow_type(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(spark_arrow_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in t])
    return t


def spark_schema(schema: pa.Schema) -> pa.Schema:
    """A Flink table's schema with :func:`spark_arrow_type` types and nullable columns."""
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), True) for f in schema])


def statectl_type(t: pa.DataType):
    return from_arrow(spark_arrow_type(t))


def _files(base: Location, files, lineage=()) -> tuple[DataFile, ...]:
    """Files inside the savepoint by relative path; others by location, with the lineage
    entry (a shallow copy's base) they lie in, if any."""
    out = []
    root = base.uri.rstrip("/") + "/"
    roots = [(e.savepoint_id, r.uri.rstrip("/") + "/") for e, r in lineage_roots(lineage)]
    for f in files:
        uri = Location.of(f.path).uri
        if uri.startswith(root):
            out.append(DataFile(FileRef(uri[len(root):]), f.size, None, None))
        else:
            owner = next((sp_id for sp_id, r in roots if uri.startswith(r)), None)
            out.append(DataFile(FileRef(f.path, savepoint=owner, location=uri), f.size, None, None))
    return tuple(out)


def _operator(base: Location, op: FlinkOperatorInfo, lineage=()) -> Operator:
    sizes = {s.name: s.size for s in op.states}
    serializers = {s.name: s.serializer for s in op.states}
    notes = {s.name: classes_note(s.type) for s in op.states}
    keyed = None
    if op.keyed_header is not None:
        schema = op.keyed_schema
        key = tuple(Field(f.name, statectl_type(f.type)) for f in TB.key_fields(op.key_type))
        states = []
        for meta in TB.keyed_states(op.keyed_header.states):
            field = schema.field(meta.name).type
            user_key = None
            if meta.kind == "list":
                value = statectl_type(field.value_type)
            elif meta.kind == "map":
                user_key, value = statectl_type(field.key_type), statectl_type(field.item_type)
            else:
                value = statectl_type(field)
            states.append(KeyedStateDescriptor(
                meta.name, meta.kind, value, user_key, serializer=serializers[meta.name], ttl=meta.ttl,
                size=sizes[meta.name], note=notes[meta.name]))
        ns = schema.field(NAMESPACE_COLUMN).type if NAMESPACE_COLUMN in schema.names else None
        keyed = KeyedSection(key, tuple(states), _files(base, op.files, lineage),
                             namespace_type=None if ns is None else statectl_type(ns), layout=op.keyed_layout)
        files_left: tuple[DataFile, ...] = ()
    else:
        files_left = _files(base, op.files, lineage)
    operator_states = []
    for name, meta in op.operator_states.items():
        if meta.kind == "broadcast":
            schema = TB.broadcast_schema(meta)
            key_type = statectl_type(schema.field("key").type)
        else:
            schema, key_type = op.table_schema(name), None  # a connector state's own struct
        operator_states.append(OperatorState(
            name, meta.kind, statectl_type(schema.field("value").type), files_left if keyed is None else (),
            key_type, serializer=serializers[name], size=sizes[name], note=notes[name]))
        files_left = ()
    if op.coordinator is not None:  # the split enumerator's checkpoint (`coordinator.py`)
        value = op.connector_schemas[op.coordinator.name].field("value").type
        operator_states.append(OperatorState(op.coordinator.name, COORDINATOR_KIND, statectl_type(value), files_left,
                                             serializer=serializers[op.coordinator.name],
                                             size=sizes[op.coordinator.name]))
    unreadable = tuple(UnreadablePart(u.part, u.reason, _files(base, u.files, lineage), u.damaged)
                       for u in op.unreadable.values())
    return Operator(op.operator_id, op.uid, op.parallelism, op.max_parallelism, keyed,
                    tuple(operator_states), format=Format.FLINK, name=op.name, unreadable=unreadable)


_JAVA_SCALARS = {"long": "Long", "int": "Integer", "short": "Short", "byte": "Byte", "double": "Double",
                 "float": "Float", "boolean": "Boolean"}


def java_key_type(key, operator: str):
    """The Java type `keyhash` takes for a Flink key type (a tuple for a Tuple key).

    Keys whose Java ``hashCode`` is not computable here (POJO, Row, opaque) raise one
    KeyTypeError naming the operator and the key's serializer.
    """
    from ..errors import KeyTypeError
    from . import types as T

    if isinstance(key, T.Scalar) and key.kind in _JAVA_SCALARS:
        return _JAVA_SCALARS[key.kind]
    if isinstance(key, T.String):
        return "String"
    if isinstance(key, T.Char):
        return "Character"
    if isinstance(key, T.Tuple):
        try:
            return tuple(java_key_type(f, operator) for f in key.fields)
        except KeyTypeError:
            pass
    raise KeyTypeError(
        f"operator {operator}: key filters need a String, number, boolean, char or tuple of these "
        f"as the key; this key is {key.describe()} ({key.serializer or 'no serializer'}); "
        "filter with --where instead")
