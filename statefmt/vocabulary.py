"""The words of the format, each defined once: state kinds, keyed tables, timer domains,
physical formats.

Each is a string enum: a member equals, hashes, prints and serialises as its
word (``StateKind.MAP == "map"``, ``f"{TimerDomain.EVENT}" == "event"``), so
`_metadata`, Parquet columns, specs and messages hold the plain word while the
code names it once.
"""

from __future__ import annotations

from enum import Enum
from functools import cache


class Word(str, Enum):
    """A word of the format (as Python 3.11's ``StrEnum``, also on 3.10)."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    @cache  # asked for every state a `_metadata` declares
    def words(cls) -> tuple[str, ...]:
        """Every word, in declaration order."""
        return tuple(m.value for m in cls)


class StateKind(Word):
    """A keyed state's kind: a column of the operator's keyed table."""

    VALUE = "value"
    LIST = "list"
    MAP = "map"
    REDUCING = "reducing"
    AGGREGATING = "aggregating"

    @property
    def is_collection(self) -> bool:
        """A list or a map: empty is no entry (`docs/FORMAT.md` §11.3)."""
        return self in (StateKind.LIST, StateKind.MAP)


class KeyedTable(Word):
    """A keyed operator's two tables, and what fills each: its keyed states (one column per
    state, of a :class:`StateKind`) and its timers. A Flink stream header's timer service is
    a state of kind ``TIMERS``; statectl's own data files are of the one or the other."""

    KEYED = "keyed"
    TIMERS = "timers"


class OperatorStateKind(Word):
    """An operator state's kind, named by how it is redistributed on restore."""

    LIST = "list"  # split evenly
    UNION = "union"  # every subtask gets all
    BROADCAST = "broadcast"  # one map, identical on every subtask


# the kind of an operator coordinator's state (a source's split enumerator checkpoint, Flink
# savepoints only): read like an operator list state, never written as one
COORDINATOR_KIND = "coordinator"


class TimerDomain(Word):
    """Which clock fires a timer; the order is the timer key's domain byte."""

    EVENT = "event"
    PROCESSING = "processing"


class Format(Word):
    """A physical format of keyed state (operator state is canonical in both)."""

    CANONICAL = "canonical"  # Parquet files sorted by key group
    ROCKSDB = "rocksdb"  # each subtask's RocksDB database (docs/FORMAT.md §12)
    FLINK = "flink"  # an Apache Flink savepoint (read; bootstrap writes canonical ones, docs/FLINK.md)

    @classmethod
    def own(cls) -> tuple[str, ...]:
        """The formats statectl writes."""
        return (cls.CANONICAL.value, cls.ROCKSDB.value, cls.FLINK.value)

    @classmethod
    def stored(cls) -> tuple[str, ...]:
        """The formats statectl's own `_metadata` may declare."""
        return (cls.CANONICAL.value, cls.ROCKSDB.value)
