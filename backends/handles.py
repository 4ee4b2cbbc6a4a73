"""The backends' state handles: the API of ``statectl.statefmt.state_api`` over a backend's tables.

A handle holds no data; every call reads or writes the backend's table for
the (key, namespace) set on the backend at that moment. Reducing and
aggregating handles carry the user's function object, given when the handle
is obtained; nothing about it is ever read from a savepoint.
"""

from __future__ import annotations

from statectl.statefmt.state_api import (
    AggregateFunction,
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)

__all__ = ["AggregateFunction", "AggregatingState", "ListState", "MapState", "ReducingState",
           "ValueState", "TableStore"]


class TableStore:
    """A :class:`~statectl.statefmt.state_api.StateStore` over one of the backend's tables."""

    __slots__ = ("_kns", "_table")

    def __init__(self, backend, table):
        self._kns = backend._current_kns
        self._table = table

    def get(self):
        return self._table.get(self._kns())

    def put(self, value) -> None:
        self._table.put(self._kns(), value)

    def delete(self) -> None:
        self._table.delete(self._kns())

    def append(self, values: list) -> None:
        self._table.append(self._kns(), values)

    def map_get(self, user_key):
        return self._table.map_get(self._kns(), user_key)

    def map_put(self, user_key, value) -> None:
        self._table.map_put(self._kns(), user_key, value)

    def map_remove(self, user_key) -> None:
        self._table.map_remove(self._kns(), user_key)

    def map_contains(self, user_key) -> bool:
        return self._table.map_contains(self._kns(), user_key)

    def map_items(self) -> list[tuple]:
        return self._table.map_items(self._kns())
