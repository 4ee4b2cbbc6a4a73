"""The state meta info at the head of keyed and operator streams.

Keyed (`KeyedBackendSerializationProxy`, also a RocksDB snapshot's meta file):
``int version, bool compressed, key snapshot, short n, n × StateMetaInfoSnapshot``.
Operator (`OperatorBackendSerializationProxy`): ``int version, [bool compressed],
short n × meta, short n × broadcast meta``. The state id used in keyed data is
the state's position in its stream's own header.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from ..vocabulary import KeyedTable
from .binary import Reader
from .rowdata import RowData
from .serializers import LIST_SERIALIZER, MAP_SERIALIZER, read_top_snapshot
from . import types as T

BACKEND_STATE_TYPES = {0: "KEY_VALUE", 1: "OPERATOR", 2: "BROADCAST", 3: "PRIORITY_QUEUE", 4: "KEY_VALUE_V2"}
KEYED_KINDS = {"VALUE": "value", "LIST": "list", "MAP": "map", "REDUCING": "reducing",
               "AGGREGATING": "aggregating", "FOLDING": "folding"}


@dataclass(frozen=True)
class StateMeta:
    """One state of a stream header.

    *kind*: value, list, map, reducing, aggregating (keyed), ``KeyedTable.TIMERS`` (a
    timer service's priority queue), list, union or broadcast (operator state).
    """
    name: str
    kind: str
    value: T.FlinkType
    namespace: T.FlinkType | None = None
    user_key: T.FlinkType | None = None  # map states: the map key; broadcast: the key
    snapshot_class: str = ""

    @property
    def ttl(self) -> bool:
        """Whether the state has a TTL: its value (a map's values, a list's elements) TTL-wrapped."""
        v = self.value.value if isinstance(self.value, T.Map) else \
            self.value.element if isinstance(self.value, T.List) else self.value
        return isinstance(v, T.Ttl)

    @property
    def serializer(self) -> str:
        return self.value.serializer


@dataclass(frozen=True)
class KeyedHeader:
    version: int
    compressed: bool
    key: T.FlinkType
    states: tuple[StateMeta, ...]
    length: int  # bytes the header takes
    raw: bytes = b""  # the header as stored: a SQL operator's is copied by the writer (snapshot_write)


@dataclass(frozen=True)
class OperatorHeader:
    version: int
    compressed: bool
    states: tuple[StateMeta, ...]
    length: int
    failure: Exception | None = None  # why the states after *states* could not be read (their data can)


def as_key(t: T.FlinkType) -> T.FlinkType:
    """A key type as keys are read: a SQL key row without its RowKind (keys are INSERT rows)."""
    return t.as_key() if isinstance(t, RowData) else t


def _options(r: Reader) -> dict[str, str]:
    return {r.utf(): r.utf() for _ in range(r.int())}


def _meta(r: Reader, version: int) -> tuple[str, int, dict[str, str], dict[str, T.FlinkType]]:
    name = r.utf()
    state_type = r.int()
    if state_type not in BACKEND_STATE_TYPES:
        raise r.error(f"unknown state type {state_type} for state {name!r}", r.pos - 4)
    options = _options(r)
    serializers = {}
    for _ in range(r.int()):
        key = r.utf()
        serializers[key] = read_top_snapshot(r)
    return name, state_type, options, serializers


def _keyed_state(name: str, state_type: int, options: dict[str, str], ser: dict[str, T.FlinkType],
                 source: str) -> StateMeta:
    value = ser.get("VALUE_SERIALIZER")
    if value is None:
        raise FlinkFormatError(f"{source}: state {name!r} has no value serializer")
    if BACKEND_STATE_TYPES[state_type] == "PRIORITY_QUEUE":
        if not isinstance(value, T.Timer):
            raise UnsupportedFlinkFeature(
                f"{source}: priority-queue state {name!r} holds {value.serializer or 'unknown'} "
                "elements, not timers")
        value = T.Timer(as_key(value.key), value.namespace, value.serializer)
        return StateMeta(name, KeyedTable.TIMERS, value, value.namespace, None, value.serializer)
    kind = KEYED_KINDS.get(options.get("KEYED_STATE_TYPE", ""), "value")
    if BACKEND_STATE_TYPES[state_type] == "KEY_VALUE_V2":
        value = _v2_value(kind, value, ser.get("USER_KEY_SERIALIZER"), name, source)
    namespace = ser.get("NAMESPACE_SERIALIZER")
    if namespace is None:
        raise FlinkFormatError(f"{source}: state {name!r} has no namespace serializer")
    user_key = None
    if kind == "map" and isinstance(value, T.Map):
        user_key = value.key
    return StateMeta(name, kind, value, namespace, user_key, value.serializer)


def _v2_value(kind: str, value: T.FlinkType, user_key: T.FlinkType | None, name: str, source: str) -> T.FlinkType:
    """A state of the asynchronous state API (state v2, Flink 2.x) as the v1 state it is stored
    like: its snapshot names a map's user key and value serializers apart, a list's element
    serializer alone, where v1 names one MapSerializer or ListSerializer."""
    if kind == "map" and not isinstance(value, T.Map):
        if user_key is None:
            raise FlinkFormatError(f"{source}: map state {name!r} has no user key serializer")
        return T.Map(user_key, value, MAP_SERIALIZER)
    if kind == "list" and not isinstance(value, T.List):
        return T.List(value, LIST_SERIALIZER)
    return value


def read_keyed_header(data: bytes, source: str) -> KeyedHeader:
    r = Reader(data, source)
    version = r.int()
    if version < 4 or version > 6:
        raise FlinkFormatError(f"{source}: keyed state stream version {version} is not supported (4 to 6)")
    compressed = r.bool()  # usingKeyGroupCompression, in every supported version
    key = as_key(read_top_snapshot(r))
    n = r.short()
    if n < 0:
        raise r.error(f"negative state count {n}", r.pos - 2)
    states = tuple(_keyed_state(*_meta(r, version), source) for _ in range(n))
    return KeyedHeader(version, compressed, key, states, r.pos, bytes(data[:r.pos]))


def read_operator_header(data: bytes, source: str) -> OperatorHeader:
    r = Reader(data, source)
    version = r.int()
    if version < 4 or version > 6:
        raise FlinkFormatError(f"{source}: operator state stream version {version} is not supported (4 to 6)")
    compressed = r.bool() if version >= 6 else False
    states: list[StateMeta] = []
    try:
        for _ in range(2):
            n = r.short()
            for _ in range(n):
                states.append(_operator_state(*_meta(r, version)))
    except (UnsupportedFlinkFeature, FlinkFormatError) as e:
        # Each operator state's data lies at offsets _metadata gives: the states described
        # before an unreadable snapshot stay readable.
        return OperatorHeader(version, compressed, tuple(states), r.pos, failure=e)
    return OperatorHeader(version, compressed, tuple(states), r.pos)


def _operator_state(name: str, state_type: int, options: dict[str, str], ser: dict[str, T.FlinkType]
                    ) -> StateMeta:
    value = ser.get("VALUE_SERIALIZER")
    if value is None:
        raise FlinkFormatError(f"operator state {name!r} has no value serializer")
    if BACKEND_STATE_TYPES[state_type] == "BROADCAST":
        if ser.get("KEY_SERIALIZER") is None:
            raise FlinkFormatError(f"broadcast state {name!r} has no key serializer")
        return StateMeta(name, "broadcast", value, None, ser["KEY_SERIALIZER"], value.serializer)
    mode = options.get("OPERATOR_STATE_DISTRIBUTION_MODE", "SPLIT_DISTRIBUTE")
    kind = {"UNION": "union", "BROADCAST": "broadcast"}.get(mode, "list")
    return StateMeta(name, kind, value, None, None, value.serializer)
