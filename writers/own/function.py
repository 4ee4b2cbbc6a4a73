"""Keyed state set by a per-key Python function, run in the executors.

Rows are partitioned by key-group chunk and sorted by key, so each task walks
its rows once, calls the function for each key with that key's rows (one
``pyarrow.Table``), and writes what the function set: the keyed table and the
timers, each into one file per chunk. One Python call per key, no per-key
Spark group (see ``notes/spark-facts.md``: grouped UDFs are far slower with
many keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import pyarrow as pa

from statectl.statefmt.canonical import keyed_schema, timers_schema
from statectl.statefmt import state_api
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.model import (
    KEY_GROUP_COLUMN,
    NAMESPACE_COLUMN,
    Field,
    KeyedSection,
    KeyedStateDescriptor,
)
from statectl.statefmt.state_api import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    TimerService,
    ValueState,
)
from statectl.statefmt.types import from_arrow, validate_type
from statectl.statefmt.vocabulary import StateKind, TimerDomain

from ..definitions import AGGREGATE_FUNCTIONS, REDUCE_FUNCTIONS, KeyedFunction
from ..errors import SpecError, StateValueError
from ..partitioning import Chunks
from ..sql import checked_key_group_sql
from .columns import key_types, require_columns
from .native import NativeSink, NativeTarget
from .sinks import HANDLE_DDL, ChunkedSink, FileTarget, OperatorOutput, guarded

FLUSH_ROWS = 16 * 1024


# --- the context a function sees -----------------------------------------------------

class _SlotStore:
    """A :class:`~statectl.statefmt.state_api.StateStore` over one state of the key's slots."""

    __slots__ = ("_ctx", "_name")

    def __init__(self, ctx: "KeyContext", name: str):
        self._ctx, self._name = ctx, name

    def get(self):
        return self._ctx._slot().get(self._name)

    def put(self, value) -> None:
        self._ctx._slot()[self._name] = value

    def delete(self) -> None:
        self._ctx._slot().pop(self._name, None)

    def append(self, values: list) -> None:
        self._ctx._slot().setdefault(self._name, []).extend(values)

    def map_get(self, user_key):
        return self._ctx._slot().get(self._name, {}).get(user_key)

    def map_put(self, user_key, value) -> None:
        self._ctx._slot().setdefault(self._name, {})[user_key] = value

    def map_remove(self, user_key) -> None:
        self._ctx._slot().get(self._name, {}).pop(user_key, None)

    def map_contains(self, user_key) -> bool:
        return user_key in self._ctx._slot().get(self._name, {})

    def map_items(self) -> list[tuple]:
        return list(self._ctx._slot().get(self._name, {}).items())


def _handle(d: KeyedStateDescriptor, store: _SlotStore):
    if d.kind == StateKind.REDUCING:
        return state_api.reducing_state(d.name, store, d.function)
    if d.kind == StateKind.AGGREGATING:
        return state_api.aggregating_state(d.name, store, d.function)
    return {StateKind.VALUE: ValueState, StateKind.LIST: ListState,
            StateKind.MAP: MapState}[d.kind](d.name, store)


class KeyContext(TimerService):
    """What a per-key function sees: the key, its states, its timers, the namespace.

    The states are the handles of ``statectl.statefmt.state_api``, as a job on
    the backends gets them: ``ctx.value("count").update(3)``,
    ``ctx.list("events").add_all([...])``, ``ctx.map("attrs").put("k", "v")``,
    ``ctx.reducing("total").add(5)``, ``ctx.aggregating("mean").add(2.5)``,
    ``ctx.timer_service.register_event_time_timer(ms)``. Setting ``ctx.namespace``
    switches every state (and new timers) to that namespace.
    """

    def __init__(self, states: list[KeyedStateDescriptor]):
        self._descriptors = {s.name: s for s in states}
        self._handles: dict[str, Any] = {}
        self.key: tuple = ()
        self.namespace: Any = None
        self._slots: dict[Any, dict] = {}
        self._timers: set = set()

    @property
    def timer_service(self) -> TimerService:
        """The timer service of the current key and namespace (the context itself)."""
        return self

    def _add_timer(self, domain: TimerDomain, timestamp: int) -> None:
        self._timers.add((self.namespace, timestamp, domain))

    def _delete_timer(self, domain: TimerDomain, timestamp: int) -> None:
        self._timers.discard((self.namespace, timestamp, domain))

    def _reset(self, key: tuple) -> None:
        self.key, self.namespace, self._slots, self._timers = key, None, {}, set()

    def _slot(self) -> dict:
        return self._slots.setdefault(self.namespace, {})

    def _handle(self, name: str, kind: str):
        d = self._descriptors.get(name)
        if d is None:
            raise StateValueError(f"no declared state {name!r}; declared: "
                                  f"{', '.join(self._descriptors) or '(none)'}")
        if d.kind != kind:
            raise StateValueError(f"state {name!r} is a {d.kind} state, not a {kind} state")
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = _handle(d, _SlotStore(self, name))
        return handle

    def value(self, name: str) -> ValueState:
        return self._handle(name, StateKind.VALUE)

    def list(self, name: str) -> ListState:
        return self._handle(name, StateKind.LIST)

    def map(self, name: str) -> MapState:
        return self._handle(name, StateKind.MAP)

    def reducing(self, name: str) -> ReducingState:
        return self._handle(name, StateKind.REDUCING)

    def aggregating(self, name: str) -> AggregatingState:
        return self._handle(name, StateKind.AGGREGATING)


# --- planning on the driver -------------------------------------------------------------

def descriptors(fn: KeyedFunction, what: str) -> tuple[KeyedStateDescriptor, ...]:
    out = []
    for s in fn.states:
        w = f"{what}, state {s.name!r}"
        if s.kind not in StateKind.words():
            raise SpecError(f"{w}: kind must be one of {', '.join(StateKind)}, got {s.kind!r}")
        if (s.kind == StateKind.MAP) != (s.user_key_type is not None):
            raise SpecError(f"{w}: a map state needs user_key_type (and only a map state)")
        if s.kind == StateKind.REDUCING and s.function not in REDUCE_FUNCTIONS:
            raise SpecError(f"{w}: function must be one of {', '.join(REDUCE_FUNCTIONS)}")
        if s.kind == StateKind.AGGREGATING and s.function is not None and s.function not in AGGREGATE_FUNCTIONS:
            raise SpecError(f"{w}: function must be one of {', '.join(AGGREGATE_FUNCTIONS)}")
        out.append(KeyedStateDescriptor(
            s.name, s.kind, _type(s.value_type, w),
            _type(s.user_key_type, w) if s.user_key_type is not None else None, s.function))
    return tuple(out)


def _type(t, where: str):
    try:
        return validate_type(t if isinstance(t, (str, dict)) else from_arrow(t), f"{where}: type")
    except StatectlError as e:
        raise SpecError(str(e)) from None


@dataclass(frozen=True)
class FunctionTask:
    """Everything a task needs to run the function (pickled to the executors)."""

    function: Callable
    section: KeyedSection
    keyed: FileTarget
    timers: FileTarget
    ranges: tuple[tuple[int, int], ...]
    what: str
    native: bool = False  # one RocksDB database per task instead of canonical files


def plan_function(fn: KeyedFunction, uid: str, max_parallelism: int, chunks: Chunks,
                  output: OperatorOutput, native: bool = False):
    """The keyed section (no files yet) and the DataFrame of handles that writes it."""
    what = f"operator {uid!r}"
    states = descriptors(fn, what)
    key = list(fn.key)
    types = key_types(fn.data, key, f"{what}, input")
    require_columns(fn.data, list(fn.order_by), f"{what}, input")
    ns = _type(fn.namespace_type, f"{what}, namespace") if fn.namespace_type is not None else None
    section = KeyedSection(tuple(Field(n, t) for n, t in zip(key, types)), states, namespace_type=ns)
    task = FunctionTask(
        fn.function, section,
        output.file_target("keyed", keyed_schema(section)),
        output.file_target("timers", timers_schema(section)),
        chunks.ranges, what, native)
    df = fn.data.selectExpr(
        "*", f"{checked_key_group_sql(key, max_parallelism, f'{what}, input')} AS {KEY_GROUP_COLUMN}")
    df = chunks.distribute(df, sort_by=(KEY_GROUP_COLUMN, *key, *fn.order_by))
    return section, df.mapInArrow(partial(_run, task), HANDLE_DDL)


# --- the task ---------------------------------------------------------------------------

def _run(task: FunctionTask, batches):
    if task.native:
        sink = NativeSink(NativeTarget(task.keyed, task.timers, task.section, task.ranges, task.what))
        yield from guarded([sink], lambda: _walk(task, batches, sink.keyed, sink.timers))
        return
    keyed = ChunkedSink(task.keyed, task.ranges, f"{task.what}, keyed state")
    timers = ChunkedSink(task.timers, task.ranges, f"{task.what}, timers")
    yield from guarded([keyed, timers], lambda: _walk(task, batches, keyed, timers))


def _walk(task: FunctionTask, batches, keyed: ChunkedSink, timers: ChunkedSink) -> None:
    section = task.section
    out = _Rows(section, keyed, timers, task.what)
    ctx = KeyContext(list(section.states))
    carry: pa.Table | None = None
    for batch in batches:
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        carry = _call_per_key(task, ctx, table, out, final=False)
    if carry is not None and carry.num_rows:
        _call_per_key(task, ctx, carry, out, final=True)
    out.flush()


def _call_per_key(task, ctx, table: pa.Table, out: "_Rows", final: bool) -> pa.Table | None:
    """Call the function for every complete key of *table*; return the rows of an open key."""
    names = task.section.key_names
    keys = list(zip(*[table.column(n).to_pylist() for n in names]))
    groups = table.column(KEY_GROUP_COLUMN).to_pylist()
    rows = table.drop_columns([KEY_GROUP_COLUMN])
    start = 0
    for i in range(1, len(keys) + 1):
        if i < len(keys) and keys[i] == keys[start]:
            continue
        if i == len(keys) and not final:
            return table.slice(start)
        ctx._reset(keys[start])
        task.function(keys[start], rows.slice(start, i - start), ctx)
        out.add(groups[start], ctx)
        start = i
    return None


class _Rows:
    """Rows the function produced, buffered column-wise and flushed to the sinks."""

    def __init__(self, section: KeyedSection, keyed: ChunkedSink, timers: ChunkedSink, what: str):
        self.section, self.keyed_sink, self.timer_sink, self.what = section, keyed, timers, what
        self.names = section.key_names
        self.keyed = self._empty([s.name for s in section.states])
        self.timers = self._empty(["timestamp", "domain"])

    def _empty(self, extra: list[str]) -> dict[str, list]:
        cols = [KEY_GROUP_COLUMN, *self.names]
        if self.section.namespace_type is not None:
            cols.append(NAMESPACE_COLUMN)
        return {c: [] for c in cols + extra}

    def _key_columns(self, target: dict, group: int, key: tuple, namespace) -> None:
        target[KEY_GROUP_COLUMN].append(group)
        for name, value in zip(self.names, key):
            target[name].append(value)
        if self.section.namespace_type is not None:
            target[NAMESPACE_COLUMN].append(namespace)
        elif namespace is not None:
            raise StateValueError(f"{self.what}: the function set a namespace, but no "
                                  "namespace_type was declared")

    def add(self, group: int, ctx: KeyContext) -> None:
        for namespace, slot in sorted(ctx._slots.items(), key=lambda kv: _order(kv[0])):
            values = {n: v for n, v in slot.items() if v not in (None, [], {})}
            if not values:
                continue
            self._key_columns(self.keyed, group, ctx.key, namespace)
            for s in self.section.states:
                self.keyed[s.name].append(values.get(s.name))
        for namespace, ts, domain in sorted(ctx._timers, key=lambda t: (_order(t[0]), t[1], t[2])):
            self._key_columns(self.timers, group, ctx.key, namespace)
            self.timers["timestamp"].append(ts)
            self.timers["domain"].append(domain)
        if max(len(self.keyed[KEY_GROUP_COLUMN]), len(self.timers[KEY_GROUP_COLUMN])) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        self._flush(self.keyed, self.keyed_sink)
        self._flush(self.timers, self.timer_sink)

    def _flush(self, columns: dict[str, list], sink: ChunkedSink) -> None:
        if not columns[KEY_GROUP_COLUMN]:
            return
        arrays = []
        for field in sink.target.schema:
            values = columns[field.name]
            if field.name in [s.name for s in self.section.states] and \
                    self.section.state(field.name).kind == StateKind.MAP:
                values = [list(v.items()) if isinstance(v, dict) else v for v in values]
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
                raise StateValueError(f"{self.what}: a value set for {field.name!r} does not fit "
                                      f"its type {field.type}: {e}") from None
            values.clear()
        sink.write(pa.Table.from_arrays(arrays, schema=sink.target.schema))


def _order(namespace) -> tuple:
    return (namespace is not None, namespace)

