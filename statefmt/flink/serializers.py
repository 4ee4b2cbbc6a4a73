"""Serializer snapshots (as stored in every stream header) to :mod:`types` values.

A top-level snapshot is ``int 2, UTF class, int version, payload``; a nested
one omits the leading ``2``. Composite snapshots carry their nested snapshots
after an outer part; POJO snapshots carry their fields by name; Avro snapshots
carry the writer schema (:mod:`.avro_schema`). Kryo and unknown classes become
:class:`Opaque`: their payload is skipped where its layout is known, and refused
(naming the class) where it is not.
"""

from __future__ import annotations

import dataclasses

from ..errors import UnsupportedFlinkFeature
from .avro_schema import read_avro_snapshot
from .binary import Reader
from .javaser import read_java_object
from .kryo import context as kryo_context
from .kryo.decode import KryoDecoder
from .kryo.snapshot import kryo_config, read_registration
from .rowdata import NullValue, RowData, SizedBytes, SqlValue
from .sqltypes import MAX_LENGTH, SqlType, logical_type
from . import types as T
from .types.avro_composite import Avro
from .types.kryo import KRYO_SERIALIZER, KryoBytes, needs_classes

COMPOSITE_MAGIC = 911108
NESTED_MAGIC = 1333245
LINKED_OPTIONAL_MAP_MAGIC = 0x4F2C69A3D70
PROXY_VERSION = 2

_BASE = "org.apache.flink.api.common.typeutils.base."
LIST_SERIALIZER = _BASE + "ListSerializer"
MAP_SERIALIZER = _BASE + "MapSerializer"
_ARRAY = _BASE + "array."

SIMPLE: dict[str, T.FlinkType] = {}  # snapshot class -> type, for snapshots without a payload

for _kind, _name in [("long", "Long"), ("int", "Int"), ("short", "Short"), ("byte", "Byte"),
                     ("double", "Double"), ("float", "Float"), ("boolean", "Boolean")]:
    SIMPLE[f"{_BASE}{_name}Serializer${_name}SerializerSnapshot"] = T.Scalar(_kind, f"{_BASE}{_name}Serializer")
    _elem = T.Scalar(_kind, f"{_BASE}{_name}Serializer")
    if _name != "Byte":
        _cls = f"{_ARRAY}{_name}PrimitiveArraySerializer"
        SIMPLE[f"{_cls}${_name}PrimitiveArraySerializerSnapshot"] = T.PrimitiveArray(_elem, _cls)
SIMPLE[f"{_BASE}CharSerializer$CharSerializerSnapshot"] = T.Char(f"{_BASE}CharSerializer")
SIMPLE[f"{_ARRAY}CharPrimitiveArraySerializer$CharPrimitiveArraySerializerSnapshot"] = \
    T.PrimitiveArray(T.Char(f"{_BASE}CharSerializer"), f"{_ARRAY}CharPrimitiveArraySerializer")
SIMPLE[f"{_ARRAY}BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot"] = \
    T.Bytes(f"{_ARRAY}BytePrimitiveArraySerializer")
SIMPLE[f"{_ARRAY}StringArraySerializer$StringArraySerializerSnapshot"] = \
    T.List(T.String(f"{_BASE}StringSerializer"), f"{_ARRAY}StringArraySerializer")
SIMPLE[f"{_BASE}StringSerializer$StringSerializerSnapshot"] = T.String(f"{_BASE}StringSerializer")
for _name in ("Date", "SqlDate", "SqlTime"):
    SIMPLE[f"{_BASE}{_name}Serializer${_name}SerializerSnapshot"] = T.Epoch(f"{_BASE}{_name}Serializer")
SIMPLE[f"{_BASE}SqlTimestampSerializer$SqlTimestampSerializerSnapshot"] = \
    T.SecondsNanos(True, f"{_BASE}SqlTimestampSerializer")
SIMPLE[f"{_BASE}InstantSerializer$InstantSerializerSnapshot"] = T.SecondsNanos(False, f"{_BASE}InstantSerializer")
SIMPLE[f"{_BASE}LocalDateSerializer$LocalDateSerializerSnapshot"] = T.LocalDate(f"{_BASE}LocalDateSerializer")
SIMPLE[f"{_BASE}LocalTimeSerializer$LocalTimeSerializerSnapshot"] = T.LocalTime(f"{_BASE}LocalTimeSerializer")
SIMPLE[f"{_BASE}LocalDateTimeSerializer$LocalDateTimeSerializerSnapshot"] = \
    T.LocalDateTime(f"{_BASE}LocalDateTimeSerializer")
SIMPLE[f"{_BASE}BigIntSerializer$BigIntSerializerSnapshot"] = T.BigInteger(f"{_BASE}BigIntSerializer")
SIMPLE[f"{_BASE}BigDecSerializer$BigDecSerializerSnapshot"] = T.BigDecimal(f"{_BASE}BigDecSerializer")
SIMPLE["org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"] = \
    T.VoidNamespace("org.apache.flink.runtime.state.VoidNamespaceSerializer")
SIMPLE["org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot"] = \
    T.VoidNamespace("org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer")
SIMPLE["org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot"] = \
    T.TimeWindow("org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer")


def _serializer_of(snapshot: str) -> str:
    """The serializer class a snapshot class belongs to (its enclosing class, or the name less 'Snapshot')."""
    if "$" in snapshot:
        return snapshot.rsplit("$", 1)[0]
    return snapshot[: -len("Snapshot")] if snapshot.endswith("Snapshot") else snapshot


# Composite snapshots: class -> (how to read the outer part, how to build the type).
def _outer_none(r: Reader, version: int):
    return None


def _outer_utf(r: Reader, version: int):
    return r.utf()


def _outer_int(r: Reader, version: int):
    return r.int()


def _outer_row(r: Reader, version: int):
    """Whether rows carry their RowKind: not before outer version 3, always in 3, a flag after."""
    return version == 3 or (version > 3 and r.bool())


def _outer_external(r: Reader, version: int):
    """An ExternalSerializer's data type (Java-serialized) and whether its input is internal."""
    read_java_object(r)
    return r.bool()


_J = "org.apache.flink.api.java.typeutils.runtime."
COMPOSITES = {
    _BASE + "ListSerializerSnapshot": (_outer_none, lambda o, n, s: T.List(n[0], _BASE + "ListSerializer")),
    _BASE + "SetSerializerSnapshot": (_outer_none, lambda o, n, s: T.List(n[0], _BASE + "SetSerializer")),
    _BASE + "MapSerializerSnapshot": (_outer_none, lambda o, n, s: T.Map(n[0], n[1], _BASE + "MapSerializer")),
    _BASE + "GenericArraySerializerSnapshot": (_outer_utf, lambda o, n, s: T.List(n[0], _BASE + "GenericArraySerializer")),
    _J + "TupleSerializerSnapshot": (_outer_utf, lambda o, n, s: T.Tuple(o, tuple(n), _J + "TupleSerializer")),
    _J + "NullableSerializer$NullableSerializerSnapshot": (
        _outer_int, lambda o, n, s: T.Nullable(n[0], o, _J + "NullableSerializer")),
    _J + "JavaEitherSerializerSnapshot": (_outer_none, lambda o, n, s: T.Either(n[0], n[1], _J + "EitherSerializer")),
    _J + "EitherSerializerSnapshot": (_outer_none, lambda o, n, s: T.Either(n[0], n[1], _J + "EitherSerializer")),
    _J + "RowSerializer$RowSerializerSnapshot": (
        _outer_row, lambda o, n, s: T.Row(tuple((f"f{i}", t) for i, t in enumerate(n)), 2 if o else 0, _J + "RowSerializer")),
    "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot": (
        _outer_none, lambda o, n, s: T.Ttl(n[1], "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer")),
    "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot": (
        _outer_none, lambda o, n, s: T.Timer(n[0], n[1], "org.apache.flink.streaming.api.operators.TimerSerializer")),
    # the external form's bytes are those of its internal serializer
    "org.apache.flink.table.runtime.typeutils.ExternalSerializer$ExternalSerializerSnapshot": (
        _outer_external, lambda o, n, s: n[0]),
    "org.apache.flink.table.runtime.typeutils.RawValueDataSerializer$RawValueDataSerializerSnapshot": (
        _outer_none, lambda o, n, s: SizedBytes(_TABLE + "RawValueDataSerializer", f"RAW, {n[0].describe()}")),
}

# CEP's NFA state and shared buffer, the interval join's buffer entries (types.library)
_CEP, _SB = T.library.CEP, T.library.SHARED
SIMPLE[_CEP + "DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot"] = \
    T.DeweyNumber(_CEP + "DeweyNumber$DeweyNumberSerializer")
SIMPLE[_SB + "EventId$EventIdSerializer$EventIdSerializerSnapshot"] = T.event_id()
COMPOSITES.update({
    _CEP + "NFAStateSerializerSnapshot": (T.nfa_state_outer, T.library.NFA_STATE),
    _SB + "NodeId$NodeIdSerializer$NodeIdSerializerSnapshot": (T.outer_version("NodeId", 1), T.library.NODE_ID),
    _SB + "LockableTypeSerializerSnapshot": (T.outer_version("Lockable", 1), T.library.LOCKABLE),
    _SB + "SharedBufferNodeSerializerSnapshotV2": (
        T.outer_version("SharedBufferNode", 1), T.library.SHARED_BUFFER_NODE),
    _SB + "SharedBufferEdge$SharedBufferEdgeSerializer$SharedBufferEdgeSerializerSnapshot": (
        T.outer_version("SharedBufferEdge", 1), T.library.SHARED_BUFFER_EDGE),
    T.library.JOIN + "BufferEntrySerializerSnapshot": (T.outer_version("BufferEntry", 2), T.library.BUFFER_ENTRY),
})

_TABLE = "org.apache.flink.table.runtime.typeutils."


def _row_data(r: Reader, version: int) -> T.FlinkType:
    """Field count, each field's LogicalType (Java-serialized), the fields' serializers."""
    if version != 3:
        raise UnsupportedFlinkFeature(f"{r.source}: RowDataSerializer snapshot version {version} is not "
                                      "supported (3)")
    n = r.int()
    if n < 0 or n > r.remaining:
        raise r.error(f"bad RowData field count {n}", r.pos - 4)
    fields = tuple(logical_type(read_java_object(r)) for _ in range(n))
    _nested(r)  # the fields' serializers follow from their types
    return RowData(fields)


def _array_data(r: Reader, version: int) -> T.FlinkType:
    element = logical_type(read_java_object(r))
    read_java_object(r)  # the element serializer, Java-serialized
    return SqlValue(SqlType("ARRAY", children=(element,)), _TABLE + "ArrayDataSerializer")


def _map_data(r: Reader, version: int) -> T.FlinkType:
    key, value = logical_type(read_java_object(r)), logical_type(read_java_object(r))
    read_java_object(r)  # the key and value serializers, Java-serialized
    read_java_object(r)
    return SqlValue(SqlType("MAP", children=(key, value)), _TABLE + "MapDataSerializer")


def _ints(count: int, build):
    def read(r: Reader, version: int) -> T.FlinkType:
        return build(*(r.int() for _ in range(count)))
    return read


# The table runtime's snapshots with a payload of their own: class -> reader of (payload, version).
TABLE_SNAPSHOTS = {
    _TABLE + "RowDataSerializer$RowDataSerializerSnapshot": _row_data,
    _TABLE + "ArrayDataSerializer$ArrayDataSerializerSnapshot": _array_data,
    _TABLE + "MapDataSerializer$MapDataSerializerSnapshot": _map_data,
    _TABLE + "StringDataSerializer$StringDataSerializerSnapshot": _ints(0, lambda: SqlValue(
        SqlType("VARCHAR", length=MAX_LENGTH), _TABLE + "StringDataSerializer")),
    _TABLE + "BinaryRowDataSerializer$BinaryRowDataSerializerSnapshot": _ints(1, lambda n: SizedBytes(
        _TABLE + "BinaryRowDataSerializer", f"a row of {n} fields without their types")),
    "org.apache.flink.table.dataview.NullSerializer$NullSerializerSnapshot": _ints(0, NullValue),
    _TABLE + "DecimalDataSerializer$DecimalSerializerSnapshot": _ints(2, lambda p, s: T.Opaque(
        _TABLE + "DecimalDataSerializer", f"DECIMAL({p}, {s}) outside a row")),
    _TABLE + "TimestampDataSerializer$TimestampDataSerializerSnapshot": _ints(1, lambda p: T.Opaque(
        _TABLE + "TimestampDataSerializer", f"TIMESTAMP({p}) outside a row")),
}

POJO_SNAPSHOT = _J + "PojoSerializerSnapshot"
KRYO_SNAPSHOT = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"
ENUM_SNAPSHOT = _BASE + "EnumSerializer$EnumSerializerSnapshot"
AVRO_SNAPSHOT = "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot"
VALUE_SNAPSHOT = _J + "ValueSerializer$ValueSerializerSnapshot"
COPYABLE_SNAPSHOT = _J + "CopyableValueSerializer$CopyableValueSerializerSnapshot"


def read_top_snapshot(r: Reader) -> T.FlinkType:
    """A snapshot written by `TypeSerializerSnapshotSerializationUtil` (proxy version 2)."""
    version = r.int()
    if version != PROXY_VERSION:
        raise r.error(f"unknown serializer snapshot format {version}", r.pos - 4)
    return read_snapshot(r)


def read_snapshot(r: Reader) -> T.FlinkType:
    """A nested snapshot: UTF class, int version, payload."""
    at = r.pos
    cls = r.utf()
    version = r.int()
    if cls in SIMPLE:
        return SIMPLE[cls]
    if cls in COMPOSITES:
        return _composite(r, cls, version)
    if cls in TABLE_SNAPSHOTS:
        return TABLE_SNAPSHOTS[cls](r, version)
    if cls == POJO_SNAPSHOT:
        return _pojo(r, version)
    if cls == ENUM_SNAPSHOT:
        enum_class = r.utf()
        values = tuple(r.utf() for _ in range(r.int()))
        return T.Enum(enum_class, values, _BASE + "EnumSerializer")
    if cls == KRYO_SNAPSHOT:
        t = _kryo(r)
        return dataclasses.replace(t, snapshot=bytes(r.data[at:r.pos])) if isinstance(t, T.Kryo) else t
    if cls == AVRO_SNAPSHOT:
        t = read_avro_snapshot(r, version)
        return dataclasses.replace(t, snapshot=bytes(r.data[at:r.pos])) if isinstance(t, Avro) else t
    if cls in (VALUE_SNAPSHOT, COPYABLE_SNAPSHOT):
        r.utf()  # value class
        return T.Opaque(_serializer_of(cls), "a Value type")
    raise UnsupportedFlinkFeature(
        f"{r.source}: serializer snapshot {cls} (version {version}) at offset {r.base + at} is not known")


def _composite(r: Reader, cls: str, version: int) -> T.FlinkType:
    read_outer, build = COMPOSITES[cls]
    if r.int() != COMPOSITE_MAGIC:
        raise r.error(f"bad composite snapshot header in {cls}", r.pos - 4)
    outer_version = r.int()
    outer = read_outer(r, outer_version)
    nested = _nested(r)
    t = build(outer, nested, cls)
    if not t.decodable and not isinstance(t, (T.Map, T.Ttl, T.Nullable)):
        return T.Opaque(t.serializer, f"holds {', '.join(_why(n) for n in nested if not n.decodable)}")
    return t


def _nested(r: Reader) -> list[T.FlinkType]:
    if r.int() != NESTED_MAGIC:
        raise r.error("bad nested serializers header", r.pos - 4)
    r.int()  # nested delegate version
    return [read_snapshot(r) for _ in range(r.int())]


def _framed(r: Reader) -> Reader:
    n = r.int()
    start = r.pos
    r.skip(n)
    return Reader(r.data, r.source, start, start + n, r.base)


def _linked_optional_map(r: Reader, read_key, read_value) -> list[tuple[str, object, object]]:
    if r.long() != LINKED_OPTIONAL_MAP_MAGIC:
        raise r.error("bad POJO snapshot map header", r.pos - 8)
    out = []
    for _ in range(r.int()):
        name = r.utf()
        key = read_key(_framed(r)) if r.bool() else None
        value = read_value(_framed(r)) if r.bool() else None
        out.append((name, key, value))
    return out


def _pojo(r: Reader, version: int) -> T.FlinkType:
    pojo_class = r.utf()

    def field_key(fr: Reader):
        return fr.utf(), fr.utf()

    def nested_or_opaque(fr: Reader):
        try:
            return read_snapshot(fr)
        except UnsupportedFlinkFeature as e:
            return T.Opaque("unknown", str(e))

    fields = _linked_optional_map(r, field_key, nested_or_opaque)
    registered = _linked_optional_map(r, lambda fr: fr.utf(), nested_or_opaque)
    others = _linked_optional_map(r, lambda fr: fr.utf(), nested_or_opaque)
    typed = tuple((name, t if t is not None else T.Opaque("unknown", "field class missing"))
                  for name, _, t in fields)
    pojo = T.Pojo(pojo_class, typed, tuple(n for n, _, _ in registered + others), _J + "PojoSerializer")
    if not pojo.decodable:
        undecodable = ", ".join(f"field {name}: {_why(t)}" for name, t in typed if not t.decodable)
        return T.Opaque(_J + "PojoSerializer", f"POJO {pojo_class} has fields without a known serializer "
                        f"({undecodable})")
    return pojo


def _why(t: T.FlinkType) -> str:
    """What a nested type that cannot be decoded is, and why (its reason, when it has one)."""
    reason = getattr(t, "reason", "")
    return reason or t.describe()


def _kryo(r: Reader) -> T.FlinkType:
    """Kryo values: decoded where the declared class and the job's layouts (`--classes`) allow."""
    type_class = r.utf()
    registrations = _linked_optional_map(r, lambda fr: None, lambda fr: fr)
    regs = [read_registration(name, value) for name, _, value in registrations]
    defaults = _linked_optional_map(r, lambda fr: None, lambda fr: None)
    default_classes = _linked_optional_map(r, lambda fr: None, lambda fr: None)
    setting = kryo_context.current()
    if setting.generation is None:
        return T.Opaque(KRYO_SERIALIZER, f"Kryo, type {type_class}")
    config = kryo_config(setting.generation, type_class, regs, defaults, default_classes)
    decoder = KryoDecoder(config, setting.classpath)
    why = needs_classes(decoder, type_class)
    if why is not None:
        return KryoBytes(KRYO_SERIALIZER, f"Kryo, type {type_class}: {why} (decodes with --classes)", decoder)
    return T.Kryo(type_class, decoder)
