"""The keyed state backend of one parallel subtask of one operator.

:class:`KeyedStateBackend` holds what both backends share: the subtask's
place (key-group range), the current key and namespace, state declarations,
timers' firing order, operator state, and restore from / snapshot to the
canonical format. Subclasses supply the storage: tables of entries keyed by
``key group ‖ key ‖ namespace`` bytes (`statectl.statefmt.rocksdb.codec`), and timers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from statectl.statefmt import canonical
from statectl.statefmt.errors import DataFileError, UnknownStateError, UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.keygroups import check_key_type, check_parallelism, default_max_parallelism, \
    key_group_for_key, key_group_range, subtask_for_key_group
from statectl.statefmt.model import (
    KEY_GROUP_COLUMN,
    NAMESPACE_COLUMN,
    RESERVED_COLUMNS,
    Field,
    KeyedSection,
    KeyedStateDescriptor,
    Operator,
    Savepoint,
)
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.savepoint import data_file_path
from statectl.statefmt.types import type_str, validate_type
from statectl.statefmt.vocabulary import Format, OperatorStateKind, StateKind, TimerDomain
from statectl.statefmt.rocksdb.codec import KEY_GROUP_BYTES, KeyLayout, key_group_of, key_group_prefix
from statectl.statefmt.rocksdb.rows import RowMaker

from statectl.statefmt.state_api import TimerService

from .handles import AggregatingState, ListState, MapState, ReducingState, TableStore, ValueState
from .opstate import OperatorStates
from .snapshot import SubtaskSnapshot

BATCH_ROWS = 4096


@dataclass(frozen=True)
class Timer:
    """A timer that fired; the backend's current key and namespace are set to its own."""

    timestamp: int
    key: tuple
    namespace: Any
    domain: str


@dataclass(frozen=True)
class Subtask:
    """Where a backend sits: an operator, a subtask index, a parallelism."""

    operator_id: str
    uid: str | None
    index: int
    parallelism: int
    max_parallelism: int

    @property
    def key_groups(self) -> tuple[int, int]:
        return key_group_range(self.max_parallelism, self.parallelism, self.index)


def _operator_of(sp: Savepoint, operator: "str | OperatorRef") -> Operator:
    return sp.operator(operator)


class KeyedStateBackend(TimerService):
    """Base class; use :class:`HeapBackend` or :class:`RocksDBBackend`."""

    format = Format.CANONICAL

    # --- construction ---------------------------------------------------------------

    def __init__(self, subtask: Subtask, key: Sequence[Field] | None, namespace_type=None,
                 states: Sequence[KeyedStateDescriptor] = (), **options):
        self.subtask = subtask
        self.first_group, self.last_group = subtask.key_groups
        self.key_fields = tuple(key) if key else ()
        for f in self.key_fields:
            check_key_type(f.type, f.name)
        if namespace_type is not None:
            validate_type(namespace_type, "namespace type")
        self.namespace_type = namespace_type
        self.layout = KeyLayout([f.type for f in self.key_fields], namespace_type) if key else None
        self._descriptors: dict[str, KeyedStateDescriptor] = {}
        self._tables: dict[str, Any] = {}
        self._handles: dict[str, Any] = {}
        self.operator_states = OperatorStates(subtask.index, subtask.parallelism)
        self._key: tuple | None = None
        self._key_prefix: bytes | None = None  # key group ‖ key
        self._namespace = None
        self._ns_bytes = b"\x00"
        self._initial_states = tuple(states)  # known before opening (restore)
        try:
            self._open(**options)
            for desc in states:
                self._declare(desc)
        except BaseException:
            self.close()  # what _open made (a RocksDB folder) goes with the failed construction
            raise

    @classmethod
    def create(cls, uid: str | None = None, *, subtask: int, parallelism: int,
               max_parallelism: int | None = None, key: Sequence | None = None,
               namespace_type=None, operator_id: str | None = None, **options):
        """A backend with empty state. *key* lists ``(name, type)`` pairs or :class:`Field`."""
        ref = OperatorRef(uid=uid) if uid is not None else OperatorRef(operator_id=operator_id)
        max_p = max_parallelism or default_max_parallelism(parallelism)
        check_parallelism(parallelism, max_p)
        fields = [f if isinstance(f, Field) else Field(*f) for f in key] if key else None
        names = [f.name for f in fields or ()]
        if len(set(names)) != len(names) or set(names) & set(RESERVED_COLUMNS):
            raise UsageError(f"key columns need distinct names, none of {', '.join(RESERVED_COLUMNS)}")
        task = Subtask(ref.resolved_id, uid, subtask, parallelism, max_p)
        key_group_range(max_p, parallelism, subtask)  # checks the index
        return cls(task, fields, namespace_type, **options)

    @classmethod
    def restore(cls, savepoint: "Savepoint | str | Location", operator: "str | OperatorRef", *,
                subtask: int, parallelism: int, **options):
        """The state subtask *subtask* of *parallelism* owns in *savepoint*.

        Only the key-group range of the subtask is read (at any parallelism up
        to the operator's max parallelism); list state is split evenly, union
        and broadcast state are given whole.
        """
        sp = savepoint if isinstance(savepoint, Savepoint) else load(savepoint)
        op = _operator_of(sp, operator)
        check_parallelism(parallelism, op.max_parallelism)
        key_group_range(op.max_parallelism, parallelism, subtask)
        keyed = op.keyed
        backend = cls(Subtask(op.operator_id, op.uid, subtask, parallelism, op.max_parallelism),
                      keyed.key if keyed else None, keyed.namespace_type if keyed else None,
                      keyed.states if keyed else (), **options)
        try:
            if keyed is not None:
                backend._restore_keyed(sp, op)
            backend.operator_states.restore(sp, op.operator_states)
        except BaseException:
            backend.close()
            raise
        return backend

    # --- what subclasses provide ------------------------------------------------------

    def _open(self, **options) -> None:
        if options:
            raise UsageError(f"unknown backend option(s): {', '.join(sorted(options))}")

    def _new_table(self, descriptor: KeyedStateDescriptor):
        raise NotImplementedError

    def _timer_add(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        raise NotImplementedError

    def _timer_remove(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        raise NotImplementedError

    def _timer_pop_due(self, domain: str, up_to: int) -> tuple[int, int, bytes] | None:
        """Remove and return the first timer ``(ts, kg, key_ns)`` of *domain* due by *up_to*."""
        raise NotImplementedError

    def _timer_scan(self) -> Iterator[tuple[int, str, int, bytes]]:
        """Every timer as ``(kg, domain, ts, key_ns)``, sorted so."""
        raise NotImplementedError

    def _restore_keyed(self, sp: Savepoint, op: Operator) -> None:
        if op.format == Format.ROCKSDB:  # decoded from the databases holding our range, into any backend
            from statectl.statefmt.rocksdb.database import range_entries

            for kind, *entry in range_entries(sp, op, self.keyed_states, self.layout,
                                              self.first_group, self.last_group):
                if kind == "timer":
                    self._timer_add(*entry)
                else:
                    self._tables[entry[0]].load(entry[1], entry[2])
        elif op.format == Format.CANONICAL:
            self._restore_canonical(sp, op.keyed)
        else:
            raise UsageError(f"cannot restore {op.format!r} state of operator {op.label}")

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- the current key and namespace ------------------------------------------------

    def _need_keyed(self) -> KeyLayout:
        if self.layout is None:
            raise UsageError(f"operator {self.label} has no keyed state (no key was declared)")
        return self.layout

    @property
    def label(self) -> str:
        return self.subtask.uid or self.subtask.operator_id

    def key_group_of(self, key) -> int:
        key = self._key_tuple(key)
        return key_group_for_key(key, [f.type for f in self.key_fields], self.subtask.max_parallelism)

    def _key_tuple(self, key) -> tuple:
        layout = self._need_keyed()
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(layout.key_types):
            raise UsageError(f"a key has {len(layout.key_types)} column(s), got {key!r}")
        return key

    def set_current_key(self, key) -> None:
        """Make *key* (a value, or a tuple for several key columns) the current key."""
        key = self._key_tuple(key)
        kg = self.key_group_of(key)
        if not self.first_group <= kg <= self.last_group:
            owner = subtask_for_key_group(kg, self.subtask.max_parallelism, self.subtask.parallelism)
            raise UsageError(f"key {key!r} is in key group {kg}, owned by subtask {owner}, "
                             f"not by subtask {self.subtask.index}")
        self._key_prefix = key_group_prefix(kg) + self.layout.key_bytes(key)
        self._key = key

    @property
    def current_key(self):
        return self._key

    def set_current_namespace(self, namespace) -> None:
        """The namespace (e.g. a window) of later state access; None is the default one."""
        layout = self._need_keyed()
        self._ns_bytes = layout.namespace_bytes(namespace)
        self._namespace = namespace

    @property
    def current_namespace(self):
        return self._namespace

    def _current_kns(self) -> bytes:
        if self._key_prefix is None:
            raise UsageError("no current key: call set_current_key first")
        return self._key_prefix + self._ns_bytes

    # --- keyed state handles --------------------------------------------------------

    def _declare(self, desc: KeyedStateDescriptor):
        self._need_keyed()
        old = self._descriptors.get(desc.name)
        if old is None:
            if desc.name in [f.name for f in self.key_fields] or desc.name in RESERVED_COLUMNS \
                    or desc.name in self.operator_states.names:
                raise UsageError(f"state name {desc.name!r} is taken by a key column, a reserved "
                                 "column or an operator state")
            self._descriptors[desc.name] = desc
            self._tables[desc.name] = self._new_table(desc)
            return self._tables[desc.name]
        if (old.kind, old.value_type, old.user_key_type) != \
                (desc.kind, desc.value_type, desc.user_key_type):
            raise UsageError(
                f"keyed state {desc.name!r} is {old.kind} state of {type_str(old.column_type)}; "
                f"it cannot be used as {desc.kind} state of {type_str(desc.column_type)}"
            )
        if desc.function and desc.function != old.function:
            self._descriptors[desc.name] = desc
            self._tables[desc.name].descriptor = desc
        return self._tables[desc.name]

    def _handle(self, desc: KeyedStateDescriptor, make: Callable):
        validate_type(desc.value_type, f"state {desc.name!r}")
        if desc.user_key_type is not None:
            validate_type(desc.user_key_type, f"state {desc.name!r} map key")
        return make(desc.name, TableStore(self, self._declare(desc)))

    def value_state(self, name: str, value_type) -> ValueState:
        return self._handle(KeyedStateDescriptor(name, StateKind.VALUE, value_type), ValueState)

    def list_state(self, name: str, element_type) -> ListState:
        return self._handle(KeyedStateDescriptor(name, StateKind.LIST, element_type), ListState)

    def map_state(self, name: str, key_type, value_type) -> MapState:
        return self._handle(KeyedStateDescriptor(name, StateKind.MAP, value_type, key_type), MapState)

    def reducing_state(self, name: str, value_type, reduce: Callable[[Any, Any], Any],
                       function: str | None = None) -> ReducingState:
        desc = KeyedStateDescriptor(name, StateKind.REDUCING, value_type,
                                    function=function or getattr(reduce, "__name__", None))
        return self._handle(desc, lambda n, store: ReducingState(n, store, reduce))

    def aggregating_state(self, name: str, accumulator_type, aggregate,
                          function: str | None = None) -> AggregatingState:
        desc = KeyedStateDescriptor(name, StateKind.AGGREGATING, accumulator_type,
                                    function=function or type(aggregate).__name__)
        return self._handle(desc, lambda n, store: AggregatingState(n, store, aggregate))

    @property
    def keyed_states(self) -> tuple[KeyedStateDescriptor, ...]:
        return tuple(self._descriptors.values())

    def keys(self, state: str) -> Iterator[tuple[tuple, Any]]:
        """Every (key, namespace) holding a value of *state* in this subtask."""
        if state not in self._tables:
            raise UnknownStateError(f"no keyed state {state!r}")
        for kns, _ in self._tables[state].scan():
            _, key, ns, _ = self.layout.split(kns)
            yield key, ns

    # --- timers -----------------------------------------------------------------------

    @property
    def timer_service(self) -> TimerService:
        """The timer service of the current key and namespace (the backend itself)."""
        return self

    def _timer_args(self) -> tuple[int, bytes]:
        kns = self._current_kns()
        return key_group_of(kns), kns[KEY_GROUP_BYTES:]

    def _add_timer(self, domain: TimerDomain, timestamp: int) -> None:
        kg, key_ns = self._timer_args()
        self._timer_add(domain, kg, timestamp, key_ns)

    def _delete_timer(self, domain: TimerDomain, timestamp: int) -> None:
        kg, key_ns = self._timer_args()
        self._timer_remove(domain, kg, timestamp, key_ns)

    def fire_event_time_timers(self, watermark: int) -> Iterator[Timer]:
        """Remove and yield every event-time timer with timestamp <= *watermark*.

        Order: timestamp, then key group, then key and namespace bytes. Before
        each yield the current key and namespace become the timer's; a timer
        registered meanwhile that is due fires in the same call.
        """
        return self._fire(TimerDomain.EVENT, watermark)

    def fire_processing_time_timers(self, now: int) -> Iterator[Timer]:
        return self._fire(TimerDomain.PROCESSING, now)

    def _fire(self, domain: str, up_to: int) -> Iterator[Timer]:
        layout = self._need_keyed()
        while (due := self._timer_pop_due(domain, up_to)) is not None:
            ts, kg, key_ns = due
            key, pos = layout.decode_key(key_ns, 0)
            ns, _ = layout.decode_namespace(key_ns, pos)
            self._key = key
            self._key_prefix = key_group_prefix(kg) + key_ns[:pos]
            self._namespace, self._ns_bytes = ns, key_ns[pos:]
            yield Timer(ts, key, ns, domain)

    # --- operator state ---------------------------------------------------------------

    def operator_list_state(self, name: str, value_type):
        return self.operator_states.get(name, OperatorStateKind.LIST, value_type, taken=self._descriptors)

    def union_list_state(self, name: str, value_type):
        return self.operator_states.get(name, OperatorStateKind.UNION, value_type, taken=self._descriptors)

    def broadcast_state(self, name: str, key_type, value_type):
        return self.operator_states.get(name, OperatorStateKind.BROADCAST, value_type, key_type,
                                        taken=self._descriptors)

    # --- canonical restore and snapshot -------------------------------------------------

    def section(self, files=(), timers=()) -> KeyedSection | None:
        if self.layout is None:
            return None
        return KeyedSection(self.key_fields, self.keyed_states, tuple(files), tuple(timers),
                            self.namespace_type)

    def _restore_canonical(self, sp: Savepoint, section: KeyedSection) -> None:
        first, last = self.first_group, self.last_group
        schema = canonical.keyed_schema(section)
        for f in canonical.files_for_range(section.files, first, last):
            table = canonical.read_key_group_range(file_location(sp, f.ref), f, schema, first, last)
            for batch in table.to_batches(BATCH_ROWS):
                for row in batch.to_pylist():
                    kns = self._row_kns(row)
                    for desc in section.states:
                        value = row[desc.name]
                        if value is not None and (value or not StateKind(desc.kind).is_collection):
                            self._tables[desc.name].load(kns, value)
        schema = canonical.timers_schema(section)
        for f in canonical.files_for_range(section.timers, first, last):
            table = canonical.read_key_group_range(file_location(sp, f.ref), f, schema, first, last)
            for row in table.to_pylist():
                kns = self._row_kns(row)
                self._timer_add(row["domain"], key_group_of(kns), row["timestamp"],
                                kns[KEY_GROUP_BYTES:])

    def _row_kns(self, row: dict) -> bytes:
        key = tuple(row[f.name] for f in self.key_fields)
        kg = self.key_group_of(key)
        if kg != row[KEY_GROUP_COLUMN]:
            raise DataFileError(f"key {key!r} is recorded in key group {row[KEY_GROUP_COLUMN]} "
                                f"but hashes to {kg}")
        ns = row.get(NAMESPACE_COLUMN)
        return key_group_prefix(kg) + self.layout.key_bytes(key) + self.layout.namespace_bytes(ns)

    def snapshot(self, out: "str | Location") -> SubtaskSnapshot:
        """Write this subtask's state as canonical files below *out*; commit with
        :func:`commit_snapshots` once every subtask has snapshotted."""
        out = Location.of(out)
        files = timers = ()
        if self.layout is not None:
            files = self._write_keyed(out)
            timers = self._write_timers(out)
        return self._snapshot_of(out, self.section(files, timers))

    def _snapshot_of(self, out: Location, section, lineage=()) -> SubtaskSnapshot:
        t = self.subtask
        return SubtaskSnapshot(
            operator_id=t.operator_id, uid=t.uid, subtask=t.index, parallelism=t.parallelism,
            max_parallelism=t.max_parallelism, keyed=section,
            operator_states=self.operator_states.snapshot(out, t.operator_id),
            format=self.format if section is not None else Format.CANONICAL,
            lineage=tuple(lineage),
        )

    def _range_path(self, kind: str) -> str:
        return data_file_path(self.subtask.operator_id, kind, f"{self.first_group}-{self.last_group}")

    def _write_rows(self, out: Location, kind: str, schema: pa.Schema, rows: Iterator[dict]):
        writer = None
        batch: list[dict] = []
        try:
            for row in rows:
                batch.append(row)
                if len(batch) >= BATCH_ROWS:
                    writer = writer or canonical.FileWriter(
                        out, self._range_path(kind), schema, (self.first_group, self.last_group))
                    writer.write(_table(batch, schema))
                    batch = []
            if batch:
                writer = writer or canonical.FileWriter(
                    out, self._range_path(kind), schema, (self.first_group, self.last_group))
                writer.write(_table(batch, schema))
            return (writer.close(),) if writer else ()
        except BaseException:
            if writer:
                writer.abort()
            raise

    def _rows(self) -> RowMaker:
        return RowMaker(self.layout, self.key_fields, self.namespace_type is not None)

    def _write_keyed(self, out: Location):
        schema = canonical.keyed_schema(self.section())
        rows = self._rows().keyed_rows({n: t.scan() for n, t in self._tables.items()})
        return self._write_rows(out, "keyed", schema, rows)

    def _write_timers(self, out: Location):
        schema = canonical.timers_schema(self.section())
        return self._write_rows(out, "timers", schema, self._rows().timer_rows(self._timer_scan()))


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    try:
        return pa.Table.from_pylist(rows, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
        raise UsageError(f"a state value does not fit its declared type: {e}") from None
