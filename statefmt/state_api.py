"""The keyed state API a function uses: state handles and the timer service.

One API for a job on the backends (``statectl.backends``) and for a bootstrap
function (``statectl.writers.own.function.KeyContext``), as in Flink, where a
bootstrap function gets the job's own state API. The handles hold the
semantics (what ``add``, ``update``, ``get`` do to a value, a list, a map, a
reduced value, an accumulator); the data lives in a :class:`StateStore` that
the owner of the handles supplies, scoped to its current key and namespace.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any, Callable, Iterable, Iterator, Protocol

from .errors import UsageError
from .vocabulary import TimerDomain


class StateStore(Protocol):
    """One state's data at the owner's current key and namespace."""

    def get(self) -> Any: ...

    def put(self, value: Any) -> None: ...

    def delete(self) -> None: ...

    def append(self, values: list) -> None: ...

    def map_get(self, user_key: Any) -> Any: ...

    def map_put(self, user_key: Any, value: Any) -> None: ...

    def map_remove(self, user_key: Any) -> None: ...

    def map_contains(self, user_key: Any) -> bool: ...

    def map_items(self) -> list[tuple]: ...


class AggregateFunction(Protocol):
    """What an aggregating state needs (as Flink's AggregateFunction)."""

    def create_accumulator(self) -> Any: ...

    def add(self, value: Any, accumulator: Any) -> Any: ...

    def get_result(self, accumulator: Any) -> Any: ...


class Average:
    """``avg``: the accumulator ``{"sum", "count"}``, the result their quotient."""

    def create_accumulator(self) -> dict:
        return {"sum": 0, "count": 0}

    def add(self, value, accumulator: dict) -> dict:
        return {"sum": accumulator["sum"] + value, "count": accumulator["count"] + 1}

    def get_result(self, accumulator: dict):
        return accumulator["sum"] / accumulator["count"] if accumulator["count"] else None


def _one(_value) -> int:
    return 1


# reducing functions by name: (what each added value becomes, how two are folded)
REDUCERS: dict[str, tuple[Callable | None, Callable[[Any, Any], Any]]] = {
    "sum": (None, operator.add), "min": (None, min), "max": (None, max), "count": (_one, operator.add),
}
AGGREGATES: dict[str, Callable[[], AggregateFunction]] = {"avg": Average}


class _Handle:
    def __init__(self, name: str, store: StateStore):
        self._name, self._store = name, store

    @property
    def name(self) -> str:
        return self._name

    def clear(self) -> None:
        self._store.delete()


class ValueState(_Handle):
    def value(self, default=None):
        v = self._store.get()
        return default if v is None else v

    def update(self, value) -> None:
        """Set the value; ``None`` clears it."""
        if value is None:
            self._store.delete()
        else:
            self._store.put(value)


class ListState(_Handle):
    """An empty list is no value (as in Flink)."""

    def get(self) -> list:
        """The list (empty when there is none); a copy."""
        return list(self._store.get() or ())

    def __iter__(self) -> Iterator:
        return iter(self.get())

    def add(self, value) -> None:
        self._store.append([value])

    def add_all(self, values: Iterable) -> None:
        values = list(values)
        if values:
            self._store.append(values)

    def update(self, values: Iterable) -> None:
        values = list(values)
        if values:
            self._store.put(values)
        else:
            self._store.delete()


class MapState(_Handle):
    """An empty map is no value (as in Flink)."""

    def get(self, user_key, default=None):
        v = self._store.map_get(user_key)
        return default if v is None else v

    def contains(self, user_key) -> bool:
        return self._store.map_contains(user_key)

    __contains__ = contains

    def put(self, user_key, value) -> None:
        self._store.map_put(user_key, value)

    def put_all(self, entries) -> None:
        """Put every entry of a dict or of an iterable of pairs."""
        for k, v in (entries.items() if isinstance(entries, dict) else entries):
            self._store.map_put(k, v)

    def remove(self, user_key) -> None:
        self._store.map_remove(user_key)

    def items(self) -> list[tuple]:
        return list(self._store.map_items())

    def keys(self) -> list:
        return [k for k, _ in self.items()]

    def values(self) -> list:
        return [v for _, v in self.items()]

    def is_empty(self) -> bool:
        return not self._store.map_items()


class ReducingState(_Handle):
    """``add`` folds a value into the state with the reduce function.

    *lift*, if given, maps each added value first (``count`` lifts every value to 1).
    """

    def __init__(self, name: str, store: StateStore, reduce: Callable[[Any, Any], Any],
                 lift: Callable[[Any], Any] | None = None):
        super().__init__(name, store)
        self._reduce, self._lift = reduce, lift

    def get(self):
        return self._store.get()

    def add(self, value) -> None:
        if self._lift is not None:
            value = self._lift(value)
        current = self._store.get()
        self._store.put(value if current is None else self._reduce(current, value))

    def update(self, value) -> None:
        """Set the reduced value itself; ``None`` clears it."""
        if value is None:
            self._store.delete()
        else:
            self._store.put(value)


class AggregatingState(_Handle):
    """``add`` folds a value into the accumulator; ``get`` is the function's result.

    Without a function (a bootstrap state whose accumulator is set directly),
    ``get`` is the accumulator and only ``update`` sets it.
    """

    def __init__(self, name: str, store: StateStore, function: AggregateFunction | None):
        super().__init__(name, store)
        self._function = function

    def get(self):
        """The aggregate's result, or None when nothing was added."""
        acc = self._store.get()
        if acc is None or self._function is None:
            return acc
        return self._function.get_result(acc)

    def accumulator(self):
        return self._store.get()

    def add(self, value) -> None:
        if self._function is None:
            raise UsageError(f"aggregating state {self._name!r}: add() needs an aggregate "
                             f"function ({', '.join(AGGREGATES)}); set the accumulator with update()")
        acc = self._store.get()
        if acc is None:
            acc = self._function.create_accumulator()
        self._store.put(self._function.add(value, acc))

    def update(self, accumulator) -> None:
        """Set the accumulator itself; ``None`` clears it."""
        if accumulator is None:
            self._store.delete()
        else:
            self._store.put(accumulator)


def reducing_state(name: str, store: StateStore, function: str) -> ReducingState:
    """A reducing state folding with the named function (one of :data:`REDUCERS`)."""
    lift, reduce = REDUCERS[function]
    return ReducingState(name, store, reduce, lift)


def aggregating_state(name: str, store: StateStore, function: str | None) -> AggregatingState:
    """An aggregating state with the named function (one of :data:`AGGREGATES`), or none."""
    return AggregatingState(name, store, AGGREGATES[function]() if function is not None else None)


class TimerService:
    """Registers and deletes timers of the current key and namespace (epoch milliseconds).

    The owner supplies ``_add_timer`` and ``_delete_timer``; a timestamp is an
    integer (a float or a bool is an error, not truncated).
    """

    def register_event_time_timer(self, timestamp: int) -> None:
        self._add_timer(TimerDomain.EVENT, _timestamp(timestamp))

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._add_timer(TimerDomain.PROCESSING, _timestamp(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._delete_timer(TimerDomain.EVENT, _timestamp(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._delete_timer(TimerDomain.PROCESSING, _timestamp(timestamp))

    def _add_timer(self, domain: TimerDomain, timestamp: int) -> None:
        raise NotImplementedError

    def _delete_timer(self, domain: TimerDomain, timestamp: int) -> None:
        raise NotImplementedError


def _timestamp(timestamp) -> int:
    if isinstance(timestamp, bool) or not isinstance(timestamp, numbers.Integral):
        raise UsageError(f"a timer's timestamp is an integer (milliseconds), got {timestamp!r}")
    return int(timestamp)
