"""Serializer snapshots and stream headers written as Flink 2.x writes them.

The inverse of :mod:`serializers` and :mod:`headers`: a :mod:`types` value (as
read from a savepoint, or parsed from a spec's Flink type binding) becomes the
snapshot bytes a job declaring that serializer writes. Flink checks a restored
state's snapshot against the job's serializer, so these bytes must be the ones
Flink itself writes (checked against job-made savepoints in the tests).
"""

from __future__ import annotations

import struct

from ..errors import UnsupportedFlinkFeature
from ..vocabulary import KeyedTable
from . import serializers as S
from . import types as T
from .binary_write import Writer
from .types.avro_composite import Avro
from .types.base import nested_types

SNAPSHOT_VERSION = 3  # Simple and composite snapshots (Flink 1.x and 2.x)
POJO_SNAPSHOT_VERSION = 2
KEYED_STREAM_VERSION = 6
OPERATOR_STREAM_VERSION = 6
META_INFO_TYPES = {"KEY_VALUE": 0, "OPERATOR": 1, "BROADCAST": 2, "PRIORITY_QUEUE": 3}
KEYED_STATE_TYPES = {"value": "VALUE", "list": "LIST", "map": "MAP", "reducing": "REDUCING",
                     "aggregating": "AGGREGATING"}
OPERATOR_MODES = {"list": "SPLIT_DISTRIBUTE", "union": "UNION", "broadcast": "BROADCAST"}

# serializer class -> snapshot class, for the snapshots without a payload
_SIMPLE_BY_SERIALIZER = {t.serializer: cls for cls, t in S.SIMPLE.items()}
# composite serializer class -> (snapshot class, outer version)
_COMPOSITE_BY_SERIALIZER = {
    S._BASE + "ListSerializer": (S._BASE + "ListSerializerSnapshot", 1),
    S._BASE + "MapSerializer": (S._BASE + "MapSerializerSnapshot", 1),
    S._J + "TupleSerializer": (S._J + "TupleSerializerSnapshot", 2),
    S._J + "NullableSerializer": (S._J + "NullableSerializer$NullableSerializerSnapshot", 2),
    S._J + "RowSerializer": (S._J + "RowSerializer$RowSerializerSnapshot", 3),
    "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer":
        ("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot", 2),
    "org.apache.flink.streaming.api.operators.TimerSerializer":
        ("org.apache.flink.streaming.api.operators.TimerSerializerSnapshot", 2),
}
LONG = T.Scalar("long", S._BASE + "LongSerializer")
# types whose snapshot is written as the savepoint holds it (no binding names what they carry)
COPIED_SNAPSHOTS = (T.Kryo, Avro)


def copied_parts(t: T.FlinkType) -> list[T.FlinkType]:
    """The types in *t* whose snapshots are written as the savepoint holds them."""
    return [part for part in nested_types(t) if isinstance(part, COPIED_SNAPSHOTS)]


def top_snapshot(w: Writer, t: T.FlinkType) -> None:
    """A snapshot as `TypeSerializerSnapshotSerializationUtil` writes it (proxy version 2)."""
    w.int(S.PROXY_VERSION)
    snapshot(w, t)


def snapshot(w: Writer, t: T.FlinkType) -> None:
    """A nested snapshot: UTF class, int version, payload."""
    if isinstance(t, COPIED_SNAPSHOTS) and t.snapshot:  # as the base holds it: the job's registrations or schema
        w.bytes(t.snapshot)
    elif t.serializer in _SIMPLE_BY_SERIALIZER:
        w.utf(_SIMPLE_BY_SERIALIZER[t.serializer])
        w.int(SNAPSHOT_VERSION)
    elif isinstance(t, T.Pojo):
        _pojo(w, t)
    elif t.serializer in _COMPOSITE_BY_SERIALIZER:
        _composite(w, t)
    else:
        raise UnsupportedFlinkFeature(f"cannot write the serializer snapshot of {t.describe()} "
                                      f"({t.serializer or 'no serializer class'})")


def _composite(w: Writer, t: T.FlinkType) -> None:
    cls, outer_version = _COMPOSITE_BY_SERIALIZER[t.serializer]
    w.utf(cls)
    _ints(w, SNAPSHOT_VERSION, S.COMPOSITE_MAGIC, outer_version)
    if isinstance(t, T.List):
        nested = [t.element]
    elif isinstance(t, T.Map):
        nested = [t.key, t.value]
    elif isinstance(t, T.Tuple):
        w.utf(t.tuple_class)
        nested = list(t.fields)
    elif isinstance(t, T.Nullable):
        w.int(t.padding)
        nested = [t.inner]
    elif isinstance(t, T.Row):
        nested = [f for _, f in t.fields]
    elif isinstance(t, T.Ttl):
        nested = [LONG, t.inner]
    elif isinstance(t, T.Timer):
        nested = [t.key, t.namespace]
    else:
        raise UnsupportedFlinkFeature(f"cannot write the serializer snapshot of {t.describe()}")
    _ints(w, S.NESTED_MAGIC, 1, len(nested))
    for n in nested:
        snapshot(w, n)


def _ints(w: Writer, *values: int) -> None:
    for v in values:
        w.int(v)


def _short(w: Writer, v: int) -> None:
    w.bytes(struct.pack(">h", v))


def _framed(w: Writer, body: Writer) -> None:
    data = body.getvalue()
    w.int(len(data))
    w.bytes(data)


def _pojo(w: Writer, t: T.Pojo) -> None:
    if t.subclasses:
        raise UnsupportedFlinkFeature(f"cannot write the snapshot of POJO {t.pojo_class} with subclasses")
    w.utf(S.POJO_SNAPSHOT)
    w.int(POJO_SNAPSHOT_VERSION)
    w.utf(t.pojo_class)
    w.long(S.LINKED_OPTIONAL_MAP_MAGIC)
    w.int(len(t.fields))
    for name, field_type in t.fields:
        w.utf(name)
        key = Writer()
        key.utf(t.pojo_class)
        key.utf(name)
        w.bool(True)
        _framed(w, key)
        value = Writer()
        snapshot(value, field_type)
        w.bool(True)
        _framed(w, value)
    for _ in range(2):  # registered and non-registered subclasses: none
        w.long(S.LINKED_OPTIONAL_MAP_MAGIC)
        w.int(0)


# --- stream headers -------------------------------------------------------------------------

def _meta_info(w: Writer, name: str, backend_type: str, options: dict[str, str],
               serializers: list[tuple[str, T.FlinkType]]) -> None:
    w.utf(name)
    _ints(w, META_INFO_TYPES[backend_type], len(options))
    for k, v in options.items():
        w.utf(k)
        w.utf(v)
    w.int(len(serializers))
    for k, t in serializers:
        w.utf(k)
        top_snapshot(w, t)


def keyed_header(key: T.FlinkType, states) -> bytes:
    """A canonical keyed stream's header (`KeyedBackendSerializationProxy` v6, uncompressed).

    *states* are :class:`headers.StateMeta` values: keyed states (value, list, map,
    reducing, aggregating; their *value* the whole state serializer: List for a list
    state, Map for a map state) and timer services (kind ``timers``, value a Timer).
    """
    w = Writer()
    w.int(KEYED_STREAM_VERSION)
    w.bool(False)
    top_snapshot(w, key)
    _short(w, len(states))
    for s in states:
        if s.kind == KeyedTable.TIMERS:
            _meta_info(w, s.name, "PRIORITY_QUEUE", {}, [("VALUE_SERIALIZER", s.value)])
        else:
            _meta_info(w, s.name, "KEY_VALUE", {"KEYED_STATE_TYPE": KEYED_STATE_TYPES[s.kind]},
                       [("VALUE_SERIALIZER", s.value), ("NAMESPACE_SERIALIZER", s.namespace)])
    return w.getvalue()


def copied_keyed_header(raw: bytes) -> bytes:
    """A keyed header read from a base (`KeyedHeader.raw`) as the writer's uncompressed streams
    carry it: its serializer snapshots the bytes Flink wrote, never written again from types.
    A SQL operator's (`RowDataSerializer`, its logical types and RAW serializers) are only
    ever copied, so the restored job's compatibility check sees what it wrote itself."""
    if len(raw) < 5 or raw[:4] != struct.pack(">i", KEYED_STREAM_VERSION):
        raise UnsupportedFlinkFeature(f"cannot copy a keyed header of version "
                                      f"{struct.unpack('>i', raw[:4])[0] if len(raw) >= 4 else '?'}; "
                                      f"only version {KEYED_STREAM_VERSION} is written")
    return raw[:4] + b"\x00" + raw[5:]  # usingKeyGroupCompression: false


def operator_header(states) -> bytes:
    """An operator state stream's header (`OperatorBackendSerializationProxy` v6, uncompressed):
    list and union states, then broadcast states (value: the map value; user_key: the map key)."""
    w = Writer()
    w.int(OPERATOR_STREAM_VERSION)
    w.bool(False)
    lists = [s for s in states if s.kind != "broadcast"]
    broadcasts = [s for s in states if s.kind == "broadcast"]
    _short(w, len(lists))
    for s in lists:
        _meta_info(w, s.name, "OPERATOR", {"OPERATOR_STATE_DISTRIBUTION_MODE": OPERATOR_MODES[s.kind]},
                   [("VALUE_SERIALIZER", s.value)])
    _short(w, len(broadcasts))
    for s in broadcasts:
        _meta_info(w, s.name, "BROADCAST", {"OPERATOR_STATE_DISTRIBUTION_MODE": "BROADCAST"},
                   [("VALUE_SERIALIZER", s.value), ("KEY_SERIALIZER", s.user_key)])
    return w.getvalue()
