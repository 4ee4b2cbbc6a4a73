"""What a user asks to write: operators and their states, as plain values.

These describe *where state comes from* (DataFrames and their columns, or a
per-key function); :mod:`statectl.writers.savepoint_writer` turns them into files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.state_api import AGGREGATES, REDUCERS
from statectl.statefmt.vocabulary import StateKind, TimerDomain

from .errors import SpecError

REDUCE_FUNCTIONS = tuple(REDUCERS)  # sum, min, max, count
AGGREGATE_FUNCTIONS = tuple(AGGREGATES)  # avg
COMBINE_RULES = ("sum", "min", "max", "any")


# --- keyed state, declared column by column ---------------------------------------

@dataclass(frozen=True)
class ValueState:
    """A column becomes a value state: one row per key, or ``combine`` them (sum|min|max|any)."""

    name: str
    column: str
    data: Any = None  # a DataFrame (a spec's DataRef until opened); None: the keyed section's data
    combine: str | None = None
    ttl_column: str | None = None  # Flink TTL states: last-access timestamps (default <column>_ttl_ts)


@dataclass(frozen=True)
class ListState:
    """The values of a column, gathered per key into a list (ordered by ``order_by`` if given)."""

    name: str
    column: str
    data: Any = None
    order_by: str | None = None
    ttl_column: str | None = None  # Flink TTL states: each element's timestamp (default <column>_ttl_ts)


@dataclass(frozen=True)
class MapState:
    """Per key, a map from ``key_column`` to ``value_column``; ``combine`` merges a repeated map key."""

    name: str
    key_column: str
    value_column: str
    data: Any = None
    combine: str | None = None
    ttl_column: str | None = None  # Flink TTL states: each entry's timestamp (default <value_column>_ttl_ts)


@dataclass(frozen=True)
class _FoldedState:
    """A column folded per key with ``function``."""

    name: str
    column: str
    function: str
    data: Any = None


class ReducingState(_FoldedState):
    """A column reduced per key with ``function`` (sum|min|max|count)."""


class AggregatingState(_FoldedState):
    """A column aggregated per key into an accumulator; ``avg`` keeps (sum, count)."""


@dataclass(frozen=True)
class Timers:
    """Timers of each key: one per row, at the time in ``column`` (epoch millis or a timestamp)."""

    domain: str
    column: str
    data: Any = None


ColumnState = ValueState | ListState | MapState | ReducingState | AggregatingState

# a column state's kind -> (its required fields, its optional fields, its class)
COLUMN_STATES = {
    StateKind.VALUE: (("column",), ("combine", "ttl_column"), ValueState),
    StateKind.LIST: (("column",), ("order_by", "ttl_column"), ListState),
    StateKind.MAP: (("key_column", "value_column"), ("combine", "ttl_column"), MapState),
    StateKind.REDUCING: (("column", "function"), (), ReducingState),
    StateKind.AGGREGATING: (("column", "function"), (), AggregatingState),
}


@dataclass(frozen=True)
class KeyedData:
    """Keyed state declared from columns: rows of ``data`` keyed by the ``key`` columns.

    ``namespace`` names a column giving each row's namespace (e.g. a window);
    every input must then have it.
    """

    key: Sequence[str]
    states: Sequence[ColumnState] = ()
    data: Any = None
    timers: Sequence[Timers] = ()
    namespace: str | None = None


# --- keyed state from a per-key function -------------------------------------------

@dataclass(frozen=True)
class StateDescriptor:
    """A keyed state a per-key function sets: its name, kind and types.

    Types are statefmt types (``"int64"``, ``{"list": "string"}``...) or pyarrow types.
    ``value_type`` is the value, list element, map value, or accumulator.
    """

    name: str
    kind: str
    value_type: Any
    user_key_type: Any = None  # map state: the map key's type
    function: str | None = None  # reducing: sum|min|max|count; aggregating: avg


@dataclass(frozen=True)
class KeyedFunction:
    """Keyed state set by ``function(key, rows, ctx)``, called once per key in the executors.

    ``key`` is a tuple of the key's values, ``rows`` a ``pyarrow.Table`` of that
    key's rows (sorted by ``order_by`` if given), ``ctx`` a
    :class:`statectl.writers.own.function.KeyContext` with the declared states and the timer
    service. ``namespace_type`` is needed only if the function sets namespaces.
    """

    key: Sequence[str]
    data: Any
    function: Callable
    states: Sequence[StateDescriptor]
    namespace_type: Any = None
    order_by: Sequence[str] = ()


# --- operator state ------------------------------------------------------------------

@dataclass(frozen=True)
class _ListOfValues:
    """Operator state holding the values of ``column``."""

    name: str
    column: str
    data: Any


class OperatorListState(_ListOfValues):
    """Operator list state: the values of ``column``, split evenly over the subtasks."""


class UnionListState(_ListOfValues):
    """Union list state: the values of ``column``; every subtask gets all on restore."""


@dataclass(frozen=True)
class BroadcastState:
    """Broadcast state: a map from ``key_column`` to ``value_column``, one copy."""

    name: str
    key_column: str
    value_column: str
    data: Any
    combine: str | None = None


OperatorStateData = OperatorListState | UnionListState | BroadcastState


@dataclass(frozen=True)
class OperatorData:
    """A new operator of a savepoint: identity, parallelism, and where its state comes from.

    It is named by its *uid*, or (uid None) by *operator_id* alone: an operator of a Flink
    base that has no uid (a Flink 1.x `_metadata` holds none, a SQL job's operators have
    none), written again under the id the job knows it by."""

    uid: str | None
    parallelism: int = 1
    max_parallelism: int | None = None
    keyed: KeyedData | KeyedFunction | None = None
    operator_states: Sequence[OperatorStateData] = field(default_factory=tuple)
    flink: Any = None  # format flink: the Flink types (a writers.flink.binding.FlinkBinding)
    operator_id: str | None = None  # 32 hex digits, when uid is None

    @property
    def ref(self) -> OperatorRef:
        """How the operator is named: by uid, or by operator id (exactly one of them)."""
        if (self.uid is None) == (self.operator_id is None):
            raise UsageError(f"an operator is named by exactly one of uid or operator id, got uid "
                             f"{self.uid!r} and operator id {self.operator_id!r}")
        return OperatorRef(uid=self.uid) if self.uid is not None else OperatorRef(operator_id=self.operator_id)

    @property
    def resolved_id(self) -> str:
        return self.ref.resolved_id

    @property
    def label(self) -> str:
        return self.uid if self.uid is not None else self.ref.operator_id

    def check(self) -> None:
        """Refuse clashing names and unknown functions before any Spark job starts."""
        where = f"operator {self.label!r}"
        names: list[str] = []
        if isinstance(self.keyed, KeyedData):
            names += [s.name for s in self.keyed.states]
            if not self.keyed.key:
                raise SpecError(f"{where}: keyed state needs at least one key column")
            for s in self.keyed.states:
                _check_column_state(s, f"{where}, state {s.name!r}")
            for t in self.keyed.timers:
                if t.domain not in TimerDomain.words():
                    raise SpecError(f"{where}: timer domain must be event or processing, got {t.domain!r}")
        elif isinstance(self.keyed, KeyedFunction):
            names += [s.name for s in self.keyed.states]
            if not self.keyed.key:
                raise SpecError(f"{where}: keyed state needs at least one key column")
        names += [s.name for s in self.operator_states]
        for s in self.operator_states:
            combine = getattr(s, "combine", None)
            if combine is not None and combine not in COMBINE_RULES:
                raise SpecError(f"{where}, state {s.name!r}: combine must be one of "
                                f"{', '.join(COMBINE_RULES)}, got {combine!r}")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SpecError(f"{where}: two states are named {', '.join(map(repr, dupes))}")


def _check_column_state(s: ColumnState, where: str) -> None:
    if isinstance(s, ReducingState) and s.function not in REDUCE_FUNCTIONS:
        raise SpecError(f"{where}: a reducing function is one of {', '.join(REDUCE_FUNCTIONS)}, "
                        f"got {s.function!r}")
    if isinstance(s, AggregatingState) and s.function not in AGGREGATE_FUNCTIONS:
        raise SpecError(f"{where}: an aggregating function is one of "
                        f"{', '.join(AGGREGATE_FUNCTIONS)}, got {s.function!r}")
    combine = getattr(s, "combine", None)
    if combine is not None and combine not in COMBINE_RULES:
        raise SpecError(f"{where}: combine must be one of {', '.join(COMBINE_RULES)}, "
                        f"got {combine!r}")
