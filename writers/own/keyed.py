"""Keyed state declared from columns: one Spark plan for all states of an operator.

Every state's input is projected to (key, namespace, tag, the state's own
columns) and the inputs are unioned; rows are hash-partitioned to the task of
their key-group chunk, grouped per key there (no second shuffle: grouping is
on a superset of the partitioning), each state computed with an aggregate
``FILTER (WHERE tag = i)``, sorted by key group, and written by the tasks.
Duplicates, null keys and null map keys fail the job with a message naming
the key (see :func:`statectl.writers.sql.raise_sql`).

When every state is a plain value state or an unordered list state, the
aggregate is left out: the rows are only sorted by (key group, key, namespace)
and the writing tasks group them (:mod:`statectl.writers.own.grouping`), which is cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Field, KeyedStateDescriptor
from statectl.statefmt.types import DataType, type_str
from statectl.statefmt.vocabulary import StateKind

from ..definitions import (
    AggregatingState,
    KeyedData,
    ListState,
    MapState,
    ReducingState,
    Timers,
    ValueState,
)
from ..errors import DuplicateKeyError, InputError, NullKeyError, SpecError
from ..partitioning import PARTITION_TAG, Chunks
from ..sql import checked_key_group_sql, key_repr_sql, lit, q, raise_sql
from .columns import cast_to, key_types, require_columns, require_numeric, spark_field_type
from .grouping import GroupedState, TaskGrouping

TAG = "_tag"


@dataclass
class KeyedPlan:
    key: tuple[Field, ...]
    namespace_type: DataType | None
    states: tuple[KeyedStateDescriptor, ...]
    # DataFrame: _key_group, key, [namespace], states; partitioned, sorted. With a grouping,
    # the input rows instead, partitioned and sorted alike: the tasks group them.
    table: object | None
    timers: object | None  # DataFrame: _key_group, key, [namespace], timestamp, domain
    grouping: TaskGrouping | None = None
    timer_grouping: TaskGrouping | None = None  # with it, ``timers`` may repeat a timer
    # with ``place=False``: the rows not yet partitioned, and the SQL order of each table's
    # rows that the caller sorts them in after partitioning them (``table_placed`` says
    # whether ``table`` is partitioned and sorted already: the aggregate plan always is)
    order: tuple[str, ...] = ()
    timer_order: tuple[str, ...] = ()
    table_placed: bool = True


class _Inputs:
    """The inputs of one keyed section, with the key's types fixed by the first one."""

    def __init__(self, keyed: KeyedData, what: str, max_parallelism: int):
        self.keyed = keyed
        self.what = what
        self.max_parallelism = max_parallelism
        self.key = list(keyed.key)
        first = keyed.data
        if first is None:
            sources = [s.data for s in keyed.states if s.data is not None]
            sources += [t.data for t in keyed.timers if t.data is not None]
            if not sources:
                raise SpecError(f"{what}: no input data")
            first = sources[0]
        self.key_types = key_types(first, self.key, f"{what}, input")
        self.ns_type = None
        if keyed.namespace:
            require_columns(first, [keyed.namespace], f"{what}, input")
            self.ns_type = spark_field_type(first, keyed.namespace)

    def data_of(self, item) -> object:
        df = item.data if item.data is not None else self.keyed.data
        if df is None:
            raise SpecError(f"{self.what}, {_label(item)}: no input data (give the state or "
                            "the keyed section an input)")
        return df

    def key_projection(self, df, where: str) -> list[str]:
        """SQL of (key columns..., [namespace], _key_group) for the rows of *df*."""
        needed = self.key + ([self.keyed.namespace] if self.keyed.namespace else [])
        require_columns(df, needed, where)
        out = []
        for name, wanted in zip(self.key, self.key_types):
            out.append(f"{cast_to(name, spark_field_type(df, name), wanted, where)} AS {q(name)}")
        if self.keyed.namespace:
            ns = self.keyed.namespace
            out.append(f"{cast_to(ns, spark_field_type(df, ns), self.ns_type, where)} "
                       f"AS {NAMESPACE_COLUMN}")
        out.append(f"{checked_key_group_sql(self.key, self.max_parallelism, where)} "
                   f"AS {KEY_GROUP_COLUMN}")
        return out

    @property
    def group_columns(self) -> list[str]:
        return [KEY_GROUP_COLUMN, *self.key] + ([NAMESPACE_COLUMN] if self.keyed.namespace else [])

    def order(self, sort_key: SortKey | None) -> list[str]:
        """SQL of the order of the keyed rows (:func:`row_order`)."""
        columns = [(n, t) for n, t in zip(self.key, self.key_types)]
        if self.keyed.namespace:
            columns.append((NAMESPACE_COLUMN, self.ns_type))
        return row_order(columns, sort_key)


# the SQL expressions a key or namespace column (quoted name, type) is sorted by
SortKey = Callable[[str, DataType], list]


def row_order(columns: list[tuple[str, DataType]], sort_key: SortKey | None) -> list[str]:
    """SQL of the order of keyed rows: key group, then each key and namespace column (name,
    type) as *sort_key* orders it (by its value without one)."""
    return [q(KEY_GROUP_COLUMN)] + [e for n, t in columns for e in (sort_key(q(n), t) if sort_key else [q(n)])]


def timer_row_order(order: list[str], sort_key: SortKey | None) -> list[str]:
    """SQL of the order of timer rows, given the keyed rows' *order*: their native key's order
    (key group, domain, time, key) when *sort_key* orders for it."""
    return [order[0], "domain", "timestamp", *order[1:]] if sort_key else [*order, "timestamp", "domain"]


def _label(item) -> str:
    if isinstance(item, Timers):
        return f"{item.domain}-time timers"
    return f"state {item.name!r}"


def plan_keyed(keyed: KeyedData, uid: str, max_parallelism: int, chunks: Chunks,
               group_in_tasks: bool = False, sort_key: SortKey | None = None,
               place: bool = True) -> KeyedPlan:
    """The Spark plan of an operator's keyed table and timers.

    With *group_in_tasks*, an operator whose states are all plain value states and
    unordered list states leaves the grouping per key to the writing tasks
    (:mod:`statectl.writers.own.grouping`); the plan's ``grouping`` then says how. Timers are
    then also sorted only, and their repeats dropped by the tasks (``timer_grouping``).
    Those sorted rows come in the order ``order`` (``timer_order``), which *sort_key* sets
    for the key and namespace columns; with *place* False they are left unpartitioned and
    unsorted, for the caller to partition and sort in that order (the native writer does,
    after joining keyed rows and timers).
    """
    what = f"operator {uid!r}"
    _check_names(keyed, what)
    inputs = _Inputs(keyed, what, max_parallelism)
    key = tuple(Field(n, t) for n, t in zip(inputs.key, inputs.key_types))
    order = inputs.order(sort_key)
    timer_order = timer_row_order(order, sort_key)
    placing = chunks if place else None
    table, states, grouping, placed = None, (), None, True
    if keyed.states and group_in_tasks and all(map(_groups_in_tasks, keyed.states)):
        table, states, grouping = _sorted_rows(keyed, inputs, placing, order, what)
        placed = place
    elif keyed.states:
        table, states = _state_table(keyed, inputs, chunks, what)
        order = [q(c) for c in inputs.group_columns]
    timers, timer_grouping = None, None
    if keyed.timers:
        timers, timer_grouping = _timer_table(keyed, inputs, chunks, what, group_in_tasks,
                                              timer_order, place)
    return KeyedPlan(key, inputs.ns_type, states, table, timers, grouping, timer_grouping,
                     tuple(order), tuple(timer_order), placed)


def _placed(df, chunks: Chunks | None, order):
    """*df* sent to its chunks' tasks and sorted in *order* (SQL); as it is without *chunks*."""
    return chunks.distribute(df, sort_by=[_expr(e) for e in order]) if chunks else df


def _groups_in_tasks(state) -> bool:
    return (isinstance(state, ValueState) and not state.combine) or \
        (isinstance(state, ListState) and not state.order_by)


def _check_names(keyed: KeyedData, what: str) -> None:
    reserved = {KEY_GROUP_COLUMN, NAMESPACE_COLUMN, TAG, PARTITION_TAG}
    for name in keyed.key:
        if name in reserved:
            raise SpecError(f"{what}: {name!r} is reserved and cannot be a key column")
    for s in keyed.states:
        if s.name in reserved or s.name in keyed.key:
            raise SpecError(f"{what}: state name {s.name!r} clashes with a key or reserved column")


def _tagged_union(keyed: KeyedData, inputs: _Inputs, what: str):
    """Every state's input projected and unioned; and each state's tag."""
    groups = _input_groups(keyed, inputs)
    tag_of = {i: g for g, (_, members) in enumerate(groups) for i, _ in members}
    parts = [_project_group(df, members, g, inputs, what) for g, (df, members) in enumerate(groups)]
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p, allowMissingColumns=True)
    return union, tag_of, len(groups)


def _sorted_rows(keyed: KeyedData, inputs: _Inputs, chunks: Chunks | None, order, what: str):
    union, tag_of, inputs_count = _tagged_union(keyed, inputs, what)
    rows = _placed(union, chunks, order)
    states, descriptors = [], []
    for i, state in enumerate(keyed.states):
        kind = StateKind.VALUE if isinstance(state, ValueState) else StateKind.LIST
        states.append(GroupedState(state.name, kind, _col(i, "v"),
                                   tag_of[i] if inputs_count > 1 else None,
                                   f"{what}, {kind} state {state.name!r}"))
        t = spark_field_type(union, _col(i, "v"))
        descriptors.append(KeyedStateDescriptor(state.name, kind, t))
    grouping = TaskGrouping(tuple(inputs.group_columns), tuple(inputs.key), TAG, tuple(states))
    return rows, tuple(descriptors), grouping


def _state_table(keyed: KeyedData, inputs: _Inputs, chunks: Chunks, what: str):
    union, tag_of, inputs_count = _tagged_union(keyed, inputs, what)
    # grouping columns first: with sort-based aggregation (see writers.job) the rows come
    # out sorted by (key group, key), so the sort below costs nothing
    grouped = chunks.distribute(union, keep_tag=True).groupBy(*inputs.group_columns, PARTITION_TAG)
    raw = []
    for i, state in enumerate(keyed.states):
        only = f" FILTER (WHERE {TAG} = {tag_of[i]})" if inputs_count > 1 else ""
        raw += _raw_aggregates(state, i, only)
    aggregated = grouped.agg(*[_expr(e) for e in raw])
    finals = [_final(state, i, inputs, what) for i, state in enumerate(keyed.states)]
    table = aggregated.selectExpr(*map(q, inputs.group_columns), *finals)
    table = table.sortWithinPartitions(*inputs.group_columns)
    descriptors = tuple(_descriptor(s, table) for s in keyed.states)
    return table, descriptors


def _input_groups(keyed: KeyedData, inputs: _Inputs) -> list[tuple[object, list]]:
    """States grouped by input DataFrame, so each input is read and shuffled once.

    A map state that combines repeated map keys is pre-aggregated, so it reads alone.
    """
    groups: list[tuple[object, list]] = []
    for i, state in enumerate(keyed.states):
        df = inputs.data_of(state)
        alone = isinstance(state, MapState) and state.combine
        for other, members in groups:
            if other is df and not alone and not _pre_aggregated(members):
                members.append((i, state))
                break
        else:
            groups.append((df, [(i, state)]))
    return groups


def _pre_aggregated(members) -> bool:
    return any(isinstance(s, MapState) and s.combine for _, s in members)


def _expr(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)


def _col(i: int, part: str) -> str:
    return f"_s{i}_{part}"


def _project_group(df, members, tag: int, inputs: _Inputs, what: str):
    columns = inputs.key_projection(df, f"{what}, state {members[0][1].name!r}")
    for i, state in members:
        columns += _state_columns(df, state, i, f"{what}, state {state.name!r}")
    projected = df.selectExpr(*columns, f"{tag} AS {TAG}")
    if _pre_aggregated(members):  # combine repeated map keys: one row per (key, ns, map key)
        (i, state), = members
        group = [c for c in projected.columns if c != _col(i, "v")]
        projected = projected.groupBy(*group).agg(
            _expr(f"{_combine(state.combine, _col(i, 'v'))} AS {_col(i, 'v')}"))
    return projected


def _state_columns(df, state, i: int, where: str) -> list[str]:
    if isinstance(state, MapState):
        own = [(state.key_column, _col(i, "k")), (state.value_column, _col(i, "v"))]
    else:
        own = [(state.column, _col(i, "v"))]
        if isinstance(state, ListState) and state.order_by:
            own.append((state.order_by, _col(i, "o")))
    require_columns(df, [c for c, _ in own], where)
    if isinstance(state, (ReducingState, AggregatingState)) and state.function != "count":
        require_numeric(state.column, spark_field_type(df, state.column), where, state.function)
    if isinstance(state, (ValueState, MapState)) and state.combine == "sum":
        column = state.value_column if isinstance(state, MapState) else state.column
        require_numeric(column, spark_field_type(df, column), where, "combine sum")
    return [f"{q(c)} AS {u}" for c, u in own]


def _combine(rule: str, column: str) -> str:
    return {"sum": f"sum({column})", "min": f"min({column})", "max": f"max({column})",
            "any": f"first({column}, true)"}[rule]


def _raw_aggregates(state, i: int, f: str) -> list[str]:
    v = _col(i, "v")
    out = [f"count(1){f} AS {_col(i, 'n')}"]
    if isinstance(state, ValueState):
        agg = _combine(state.combine, v) if state.combine else f"first({v})"
        out.append(f"{agg}{f} AS {_col(i, 'r')}")
    elif isinstance(state, ListState):
        item = f"struct({_col(i, 'o')} AS o, {v} AS v)" if state.order_by else v
        out.append(f"collect_list({item}){f} AS {_col(i, 'r')}")
    elif isinstance(state, MapState):
        out.append(f"collect_list(struct({_col(i, 'k')} AS k, {v} AS v)){f} AS {_col(i, 'r')}")
        out.append(f"count({_col(i, 'k')}){f} AS {_col(i, 'nk')}")
    elif isinstance(state, ReducingState):
        out.append(f"{state.function}({v}){f} AS {_col(i, 'r')}")
    elif isinstance(state, AggregatingState):  # avg: the (sum, count) accumulator
        out.append(f"sum({v}){f} AS {_col(i, 's')}")
        out.append(f"count({v}){f} AS {_col(i, 'c')}")
    return out


def _final(state, i: int, inputs: _Inputs, what: str) -> str:
    n, r = _col(i, "n"), _col(i, "r")
    where = f"{what}, {type(state).__name__.replace('State', '').lower()} state {state.name!r}"
    key = key_repr_sql(inputs.key)
    if isinstance(state, ValueState):
        if state.combine:
            body = r
        else:
            dup = raise_sql(DuplicateKeyError, f"{where}: key ", key, " has ", n,
                            " rows; a value state holds one value per key "
                            "(set combine to sum, min, max or any)")
            body = f"CASE WHEN {n} > 1 THEN {dup} ELSE {r} END"
    elif isinstance(state, ListState):
        items = f"filter(transform(array_sort({r}), x -> x.v), x -> x IS NOT NULL)" \
            if state.order_by else r
        body = f"CASE WHEN size({r}) > 0 THEN {items} END"
    elif isinstance(state, MapState):
        keys = f"transform({r}, x -> x.k)"
        dup = f"filter(array_distinct({keys}), x -> size(filter({keys}, y -> y = x)) > 1)[0]"
        null_key = raise_sql(NullKeyError, f"{where}: key ", key,
                             f" has a null map key in column {state.key_column!r}")
        twice = raise_sql(DuplicateKeyError, f"{where}: key ", key, " has map key ", dup,
                          " twice (set combine to sum, min, max or any)")
        body = (f"CASE WHEN {n} = 0 THEN NULL WHEN {_col(i, 'nk')} < {n} THEN {null_key} "
                f"WHEN size(array_distinct({keys})) < {n} THEN {twice} "
                f"ELSE map_from_entries({r}) END")
    elif isinstance(state, ReducingState):
        body = f"CASE WHEN {n} > 0 THEN {r} END"
    else:
        body = (f"CASE WHEN {n} > 0 THEN named_struct('sum', {_col(i, 's')}, "
                f"'count', {_col(i, 'c')}) END")
    return f"{body} AS {q(state.name)}"


def _descriptor(state, table) -> KeyedStateDescriptor:
    t = spark_field_type(table, state.name)
    if isinstance(state, ValueState):
        return KeyedStateDescriptor(state.name, StateKind.VALUE, t)
    if isinstance(state, ListState):
        return KeyedStateDescriptor(state.name, StateKind.LIST, t["list"])
    if isinstance(state, MapState):
        return KeyedStateDescriptor(state.name, StateKind.MAP, t["map"]["value"], t["map"]["key"])
    if isinstance(state, ReducingState):
        return KeyedStateDescriptor(state.name, StateKind.REDUCING, t, function=state.function)
    return KeyedStateDescriptor(state.name, StateKind.AGGREGATING, t, function=state.function)


def _timer_table(keyed: KeyedData, inputs: _Inputs, chunks: Chunks, what: str,
                 in_tasks: bool, order, place: bool):
    """The timers, partitioned and sorted; made distinct by Spark, or by the tasks (*in_tasks*)."""
    parts = []
    for timers in keyed.timers:
        where = f"{what}, {timers.domain}-time timers"
        df = inputs.data_of(timers)
        require_columns(df, [timers.column], where)
        t = spark_field_type(df, timers.column)
        c = q(timers.column)
        if t in ("int8", "int16", "int32", "int64"):
            ts = f"CAST({c} AS BIGINT)"
        elif isinstance(t, dict) and "timestamp" in t:
            ts = f"unix_millis({c})"
        else:
            raise InputError(f"{where}: column {timers.column!r} has type {type_str(t)}; "
                             "a timer's time is epoch milliseconds (an integer) or a timestamp")
        null_check = raise_sql(InputError, f"{where}: a row has a null time in column {timers.column!r}")
        parts.append(df.selectExpr(
            *inputs.key_projection(df, where),
            f"CASE WHEN {c} IS NULL THEN {null_check} ELSE {ts} END AS timestamp",
            f"{lit(timers.domain)} AS domain",
        ))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    columns = inputs.group_columns + ["timestamp", "domain"]
    if in_tasks:  # a timer repeated in the sorted rows is a run the tasks keep once
        rows = _placed(union, chunks if place else None, order)
        return rows, TaskGrouping(tuple(columns), tuple(inputs.key), TAG, ())
    distinct = chunks.distribute(union, keep_tag=True).groupBy(*columns, PARTITION_TAG).count()
    return distinct.select(*columns).sortWithinPartitions(*columns), None
