"""Job-side state backends: restore one subtask's state from a savepoint, use it, snapshot it.

Internal: the public API is the ``statectl`` package (its ``__all__``); the modules and names
here may move.

:class:`HeapBackend` keeps state in Python dicts; :class:`RocksDBBackend` in
RocksDB through rocksdict. Both restore only the key-group range their
subtask owns, at any parallelism, and snapshot into files that
:func:`commit_snapshots` commits as one savepoint. `docs/BACKENDS.md` is the guide.
"""

from .base import KeyedStateBackend, Subtask, Timer
from .handles import AggregateFunction, AggregatingState, ListState, MapState, ReducingState, ValueState
from .heap import HeapBackend
from .rocks import RocksDBBackend
from .snapshot import SubtaskSnapshot, commit_snapshots

__all__ = [
    "KeyedStateBackend", "Subtask", "Timer", "AggregateFunction", "AggregatingState", "ListState",
    "MapState", "ReducingState", "ValueState", "HeapBackend", "RocksDBBackend", "SubtaskSnapshot",
    "commit_snapshots",
]
