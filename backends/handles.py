"""State handles: what a job's function uses, scoped to the backend's current key and namespace.

A handle holds no data; every call reads or writes the backend's table for
the (key, namespace) set on the backend at that moment. Reducing and
aggregating handles carry the user's function object, given when the handle
is obtained; nothing about it is ever read from a savepoint.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Protocol


class AggregateFunction(Protocol):
    """What an aggregating state needs (as Flink's AggregateFunction)."""

    def create_accumulator(self) -> Any: ...

    def add(self, value: Any, accumulator: Any) -> Any: ...

    def get_result(self, accumulator: Any) -> Any: ...


class _Handle:
    def __init__(self, backend, table):
        self._backend = backend
        self._table = table

    @property
    def name(self) -> str:
        return self._table.descriptor.name

    def _kns(self) -> bytes:
        return self._backend._current_kns()

    def clear(self) -> None:
        self._table.delete(self._kns())


class ValueState(_Handle):
    def value(self, default=None):
        v = self._table.get(self._kns())
        return default if v is None else v

    def update(self, value) -> None:
        if value is None:
            self._table.delete(self._kns())
        else:
            self._table.put(self._kns(), value)


class ListState(_Handle):
    def get(self) -> list:
        """The list (empty when there is none); a copy."""
        return list(self._table.get(self._kns()) or ())

    def __iter__(self) -> Iterator:
        return iter(self.get())

    def add(self, value) -> None:
        self._table.append(self._kns(), [value])

    def add_all(self, values: Iterable) -> None:
        values = list(values)
        if values:
            self._table.append(self._kns(), values)

    def update(self, values: Iterable) -> None:
        values = list(values)
        if values:
            self._table.put(self._kns(), values)
        else:
            self._table.delete(self._kns())


class MapState(_Handle):
    def get(self, user_key, default=None):
        v = self._table.map_get(self._kns(), user_key)
        return default if v is None else v

    def contains(self, user_key) -> bool:
        return self._table.map_contains(self._kns(), user_key)

    __contains__ = contains

    def put(self, user_key, value) -> None:
        self._table.map_put(self._kns(), user_key, value)

    def put_all(self, entries) -> None:
        pairs = entries.items() if isinstance(entries, dict) else entries
        for k, v in pairs:
            self.put(k, v)

    def remove(self, user_key) -> None:
        self._table.map_remove(self._kns(), user_key)

    def items(self) -> list[tuple]:
        return list(self._table.map_items(self._kns()))

    def keys(self) -> list:
        return [k for k, _ in self.items()]

    def values(self) -> list:
        return [v for _, v in self.items()]

    def is_empty(self) -> bool:
        return not self._table.map_items(self._kns())


class ReducingState(_Handle):
    def __init__(self, backend, table, reduce: Callable[[Any, Any], Any]):
        super().__init__(backend, table)
        self._reduce = reduce

    def get(self):
        return self._table.get(self._kns())

    def add(self, value) -> None:
        kns = self._kns()
        current = self._table.get(kns)
        self._table.put(kns, value if current is None else self._reduce(current, value))


class AggregatingState(_Handle):
    def __init__(self, backend, table, function: AggregateFunction):
        super().__init__(backend, table)
        self._function = function

    def get(self):
        """The aggregate's result, or None when nothing was added."""
        acc = self._table.get(self._kns())
        return None if acc is None else self._function.get_result(acc)

    def add(self, value) -> None:
        kns = self._kns()
        acc = self._table.get(kns)
        if acc is None:
            acc = self._function.create_accumulator()
        self._table.put(kns, self._function.add(value, acc))
