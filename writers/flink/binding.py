"""The ``flink:`` part of a spec operator: the Flink serializers a Flink savepoint needs.

Flink restores a state only when its serializer snapshot is the one the job
declares, so a Flink savepoint needs, beyond the data, the Java type of the key
and of every state. The binding gives those a column's Arrow type does not say
(``docs/FLINK.md``, "Writing Flink savepoints")::

    flink:
      key: String                     # default: from the key column(s)
      namespace: TimeWindow           # default: VoidNamespace
      timer_service: user-timers      # default: user-timers
      states:
        count: Long                   # a type, or {type, ttl, kind, key}
        avg: {type: "Tuple2<Long, Long>", kind: aggregating}
        ttl_last: {type: String, ttl: true}
        rules: {type: String, key: String}   # broadcast state: the map key's type

Types are checked when the spec is read (:func:`parse_binding`), so a wrong one
is a spec error line like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import parse_type

from ..errors import SpecError

FLINK_KINDS = ("reducing", "aggregating")
DEFAULT_TIMER_SERVICE = "user-timers"


@dataclass(frozen=True)
class StateBinding:
    """A state's Flink type (None: derived from its column), TTL, and Flink state kind.

    *kind* ``reducing`` or ``aggregating`` marks a value column holding a REDUCING
    state's reduced value or an AGGREGATING state's accumulator.
    """

    type: T.FlinkType | None = None
    ttl: bool = False
    kind: str | None = None
    key: T.FlinkType | None = None  # broadcast state: the map key's type


@dataclass(frozen=True)
class FlinkBinding:
    """An operator's serializers. *header*: the base's keyed header, copied as it is, when the
    types are a SQL operator's (RowData, which has no binding text) or a rescale moves the
    keyed entries as their bytes: its states keep the base's order, and no serializer snapshot
    is written from a type. *native*: the keyed state is written as a native RocksDB snapshot
    (the files Flink's RocksDB and ForSt backends restore as their own), not as canonical
    streams."""

    key: T.FlinkType | None = None
    namespace: T.FlinkType | None = None
    timer_service: str = DEFAULT_TIMER_SERVICE
    states: dict[str, StateBinding] = field(default_factory=dict)
    header: bytes | None = None
    native: bool = False

    def state(self, name: str) -> StateBinding:
        return self.states.get(name, StateBinding())

    def __hash__(self):  # frozen with a dict: hash by its items
        return hash((self.key, self.namespace, self.timer_service, tuple(sorted(self.states.items())),
                     self.header, self.native))


def _type(value: Any, where: str) -> T.FlinkType:
    try:
        return parse_type(value, where)
    except FlinkEncodeError as e:
        raise SpecError(str(e)) from None


def parse_binding(value: Any, where: str) -> FlinkBinding:
    """The binding of one operator (its ``flink:`` mapping)."""
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - {"key", "namespace", "timer_service", "states"})
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                        "known: key, namespace, states, timer_service")
    key = _type(value["key"], f"{where}.key") if value.get("key") is not None else None
    namespace = _type(value["namespace"], f"{where}.namespace") if value.get("namespace") is not None else None
    if namespace is not None and not isinstance(namespace, (T.VoidNamespace, T.TimeWindow)):
        raise SpecError(f"{where}.namespace must be VoidNamespace or TimeWindow")
    service = value.get("timer_service", DEFAULT_TIMER_SERVICE)
    if not isinstance(service, str) or not service:
        raise SpecError(f"{where}.timer_service must be a name such as user-timers")
    states = value.get("states") or {}
    if not isinstance(states, dict):
        raise SpecError(f"{where}.states must map state names to Flink types")
    return FlinkBinding(key, namespace, service,
                        {str(n): _state(s, f"{where}.states.{n}") for n, s in states.items()})


def _state(value: Any, where: str) -> StateBinding:
    if isinstance(value, str) or (isinstance(value, dict) and "pojo" in value):
        return StateBinding(_type(value, where))
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a Flink type or a mapping {{type, ttl, kind, key}}")
    unknown = sorted(set(value) - {"type", "ttl", "kind", "key"})
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)}; known: key, kind, ttl, type")
    kind = value.get("kind")
    if kind is not None and kind not in FLINK_KINDS:
        raise SpecError(f"{where}.kind must be reducing or aggregating (for a value column holding "
                        f"the reduced value or the accumulator), got {kind!r}")
    ttl = value.get("ttl", False)
    if not isinstance(ttl, bool):
        raise SpecError(f"{where}.ttl must be true or false")
    return StateBinding(_type(value["type"], f"{where}.type") if value.get("type") is not None else None,
                        ttl, kind, _type(value["key"], f"{where}.key") if value.get("key") is not None else None)
