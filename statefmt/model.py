"""The savepoint model: what `_metadata` describes, as immutable values.

`metadata.py` turns these into JSON and back; nothing else parses `_metadata`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterator

from .errors import UnknownOperatorError, UnknownStateError, UnreadableStateError, UsageError
from .ids import OperatorRef, is_operator_id
from .types import DataType, list_of, map_of
from .vocabulary import Format, StateKind

FORMAT_NAME = "statectl-savepoint"
FORMAT_VERSION = 1

KEY_GROUP_COLUMN = "_key_group"
NAMESPACE_COLUMN = "namespace"
RESERVED_COLUMNS = (KEY_GROUP_COLUMN, NAMESPACE_COLUMN)
TTL_SUFFIX = "_ttl_ts"  # a Flink TTL state's last-access timestamps column
TIMER_TIME_COLUMN = "timestamp"  # a timers table's time (epoch milliseconds)


@dataclass(frozen=True)
class FileRef:
    """Where a data file lies: a relative path inside a savepoint directory.

    ``savepoint`` is None for this savepoint's own files, or the savepoint id of
    one of its lineage entries for a file shared from another savepoint.
    ``location`` is set only for a Flink file handle: where the file lies
    (checked by the reference check), *path* then being the handle's text.
    """

    path: str
    savepoint: str | None = None
    location: str | None = None

    @property
    def is_shared(self) -> bool:
        return self.savepoint is not None


@dataclass(frozen=True)
class DataFile:
    """One data file: its reference, and what must be true of it.

    statectl's own files always carry a checksum and a row count (`metadata.py`
    requires them); Flink's files have neither, so both are None there.
    """

    ref: FileRef
    size: int
    checksum: str | None  # "sha256:<64 hex digits>"
    rows: int | None
    key_groups: tuple[int, int] | None = None  # inclusive range, keyed and timer files
    name: str | None = None  # native files only: the file's name in its RocksDB directory


@dataclass(frozen=True)
class Field:
    name: str
    type: DataType


@dataclass(frozen=True)
class KeyedStateDescriptor:
    """One keyed state: a column of the operator's keyed table.

    ``value_type`` is the value of a value state, the element of a list state,
    the map value of a map state, the reduced value of a reducing state and the
    accumulator of an aggregating state. ``user_key_type`` is the map key.
    """

    name: str
    kind: str
    value_type: DataType
    user_key_type: DataType | None = None
    function: str | None = None  # reducing/aggregating: what combined the values
    # Flink savepoints only: the state's serializer class, whether it has a TTL (its
    # last-access timestamps are the column <name>_ttl_ts), and the bytes holding it
    serializer: str | None = None
    ttl: bool = False
    size: int | None = None
    note: str = ""  # why the values stay bytes where something would decode them (Flink: --classes)

    @property
    def columns(self) -> list[str]:
        """The table columns of this state: its own, and its TTL timestamps if any."""
        return [self.name, self.name + TTL_SUFFIX] if self.ttl else [self.name]

    @property
    def column_type(self) -> DataType:
        if self.kind == StateKind.LIST:
            return list_of(self.value_type)
        if self.kind == StateKind.MAP:
            return map_of(self.user_key_type, self.value_type)
        return self.value_type


@dataclass(frozen=True)
class KeyedSection:
    """An operator's keyed state: one table keyed by (key, namespace), plus timers."""

    key: tuple[Field, ...]
    states: tuple[KeyedStateDescriptor, ...]
    files: tuple[DataFile, ...] = ()
    timers: tuple[DataFile, ...] = ()
    namespace_type: DataType | None = None
    layout: str | None = None  # how a format with more than one way stores it (Flink: canonical, ...)

    @property
    def key_names(self) -> list[str]:
        return [f.name for f in self.key]

    @property
    def key_types(self) -> list[DataType]:
        return [f.type for f in self.key]

    def state(self, name: str) -> KeyedStateDescriptor:
        for s in self.states:
            if s.name == name:
                return s
        raise UnknownStateError(f"no keyed state {name!r}; keyed states: {_names(self.states)}")


@dataclass(frozen=True)
class OperatorState:
    """Operator list, union or broadcast state, with its files.

    List and union files hold (subtask, value) rows; broadcast files one copy
    of the map as (key, value) rows, ``key_type`` being the map key.
    """

    name: str
    kind: str
    value_type: DataType
    files: tuple[DataFile, ...] = ()
    key_type: DataType | None = None
    serializer: str | None = None  # Flink savepoints only, as for keyed states
    size: int | None = None
    note: str = ""  # as for keyed states


KEYED_PART = "keyed state"  # the part name of an operator's whole keyed state (and timers)


@dataclass(frozen=True)
class UnreadablePart:
    """A part of an operator whose stream header statectl cannot parse (an unknown
    serializer snapshot, a damaged header): listed, its files checked, never read.

    *part* is :data:`KEYED_PART` or the name of an operator state.
    """

    part: str
    reason: str
    files: tuple[DataFile, ...] = ()
    damaged: bool = True  # False: intact, only not decodable here (e.g. the job's own serializer)


def cannot_read(label: str, part: str, reason: str) -> UnreadableStateError:
    """The one line that refuses to read *part* (:data:`KEYED_PART` or an operator state's
    name) of operator *label*, for *reason*."""
    what = "its keyed state and timers" if part == KEYED_PART else f"its operator state {part!r}"
    return UnreadableStateError(f"operator {label}: {what} cannot be read: {reason}")


@dataclass(frozen=True)
class Operator:
    operator_id: str
    uid: str | None
    parallelism: int
    max_parallelism: int
    keyed: KeyedSection | None = None
    operator_states: tuple[OperatorState, ...] = ()
    format: str = Format.CANONICAL
    name: str | None = None  # Flink savepoints only: the operator's name in the job
    unreadable: tuple[UnreadablePart, ...] = ()  # Flink savepoints only

    @property
    def label(self) -> str:
        return self.uid if self.uid is not None else self.operator_id

    @property
    def state_names(self) -> list[str]:
        keyed = [s.name for s in self.keyed.states] if self.keyed else []
        return keyed + [s.name for s in self.operator_states]

    def unreadable_part(self, part: str) -> UnreadablePart | None:
        return next((u for u in self.unreadable if u.part == part), None)

    def operator_state(self, name: str) -> OperatorState:
        for s in self.operator_states:
            if s.name == name:
                return s
        raise UnknownStateError(
            f"operator {self.label} has no operator state {name!r}; "
            f"its states: {_names(self.operator_states) if self.state_names else '(none)'}"
        )

    def data_files(self) -> Iterator[DataFile]:
        if self.keyed:
            yield from self.keyed.files
            yield from self.keyed.timers
        for s in self.operator_states:
            yield from s.files
        for u in self.unreadable:
            yield from u.files

    def map_files(self, rewrite: Callable[[DataFile], DataFile]) -> "Operator":
        """This operator with every data file passed through *rewrite*."""
        keyed = self.keyed
        if keyed is not None:
            keyed = dataclasses.replace(keyed, files=tuple(map(rewrite, keyed.files)),
                                        timers=tuple(map(rewrite, keyed.timers)))
        states = tuple(dataclasses.replace(s, files=tuple(map(rewrite, s.files)))
                       for s in self.operator_states)
        unreadable = tuple(dataclasses.replace(u, files=tuple(map(rewrite, u.files))) for u in self.unreadable)
        return dataclasses.replace(self, keyed=keyed, operator_states=states, unreadable=unreadable)

    def replace(self, **changes) -> "Operator":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class LineageEntry:
    """A savepoint whose files this one references (a shallow copy's base)."""

    savepoint_id: str
    location: str  # absolute URI or path of that savepoint's directory


@dataclass(frozen=True)
class Savepoint:
    savepoint_id: str
    created_at: str
    operators: tuple[Operator, ...]
    lineage: tuple[LineageEntry, ...] = ()
    format_version: int = FORMAT_VERSION
    location: str | None = field(default=None, compare=False)  # where it was read from
    # The format's own parsed description of the savepoint at *location*, for its readers and
    # writers (a Flink savepoint's `FlinkSavepoint`); not part of the model's value.
    description: object = field(default=None, compare=False, repr=False)

    def operator(self, ref: OperatorRef | str) -> Operator:
        """The operator named by *ref*: an :class:`OperatorRef`, or a string taken as a uid.

        A string that is no operator's uid but is the id of an operator here names
        that operator, so operators known only by id are easy to reach.
        """
        if isinstance(ref, str):
            found = self._find(OperatorRef(uid=ref).resolved_id)
            if found is None and is_operator_id(ref.lower()):
                found = self._find(ref.lower())
            if found is None and any(op.name == ref for op in self.operators):
                return self.operator_named(ref)
            if found is not None:
                return found
            ref = OperatorRef(uid=ref)
        elif not isinstance(ref, OperatorRef):
            raise UsageError(f"name an operator by uid (a string) or OperatorRef, got {ref!r}")
        if ref.name is not None:
            return self.operator_named(ref.name)
        found = self._find(ref.resolved_id)
        if found is None:
            raise UnknownOperatorError(f"no operator with {ref}; operators: {self.operator_labels()}")
        return found

    def operator_named(self, name: str) -> Operator:
        """The one operator whose name in the job is *name* (Flink savepoints name them)."""
        found = [op for op in self.operators if op.name == name]
        if len(found) == 1:
            return found[0]
        if found:
            raise UsageError(f"{len(found)} operators are named {name!r} (ids "
                             f"{', '.join(op.operator_id for op in found)}); choose one by its operator id")
        names = ", ".join(sorted({op.name for op in self.operators if op.name})) or "(none)"
        raise UnknownOperatorError(f"no operator named {name!r}; operator names: {names}")

    def _find(self, operator_id: str) -> Operator | None:
        return next((op for op in self.operators if op.operator_id == operator_id), None)

    def operator_labels(self) -> str:
        if not self.operators:
            return "(none)"
        return ", ".join(
            op.uid if op.uid is not None else f"{op.operator_id} (no uid)" for op in self.operators
        )

    def data_files(self) -> Iterator[tuple[Operator, DataFile]]:
        for op in self.operators:
            for f in op.data_files():
                yield op, f

    def lineage_entry(self, savepoint_id: str) -> LineageEntry:
        for entry in self.lineage:
            if entry.savepoint_id == savepoint_id:
                return entry
        raise KeyError(savepoint_id)

    def replace(self, **changes) -> "Savepoint":
        """This savepoint changed; moved to another location, it no longer carries the
        description of the savepoint at its old one."""
        if changes.get("location", self.location) != self.location:
            changes.setdefault("description", None)
        return dataclasses.replace(self, **changes)


def _names(items) -> str:
    names = [i.name for i in items]
    return ", ".join(names) if names else "(none)"
