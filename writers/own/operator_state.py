"""Operator list, union and broadcast state from DataFrames.

List and union state: the values are dealt round-robin over the operator's
subtasks, each task writing one file of (subtask, value) rows. Broadcast
state: one copy of the map, checked for repeated keys, in one file.
"""

from __future__ import annotations

from functools import partial

from statectl.statefmt.canonical import operator_state_schema
from statectl.statefmt.model import OperatorState
from statectl.statefmt.vocabulary import OperatorStateKind

from ..definitions import BroadcastState, OperatorListState, OperatorStateData
from ..errors import DuplicateKeyError, NullKeyError
from ..sql import q, raise_sql
from .columns import require_columns, require_numeric, spark_field_type
from .sinks import HANDLE_DDL, FileTarget, OperatorOutput, SingleFileSink, guarded


def plan_operator_state(state: OperatorStateData, uid: str, parallelism: int,
                        output: OperatorOutput) -> tuple[OperatorState, object]:
    """The state's descriptor (no files yet) and the DataFrame of handles that writes it.

    *output* says where the operator's files go.
    """
    where = f"operator {uid!r}, {_kind(state)} state {state.name!r}"
    df = state.data
    if isinstance(state, BroadcastState):
        require_columns(df, [state.key_column, state.value_column], where)
        key_type = spark_field_type(df, state.key_column)
        rows = _broadcast_rows(df, state, where)
        descriptor = OperatorState(state.name, OperatorStateKind.BROADCAST, spark_field_type(rows, "value"),
                                   key_type=key_type)
        rows = rows.coalesce(1)
    else:
        require_columns(df, [state.column], where)
        kind = OperatorStateKind.LIST if isinstance(state, OperatorListState) \
            else OperatorStateKind.UNION
        descriptor = OperatorState(state.name, kind, spark_field_type(df, state.column))
        rows = df.selectExpr(f"{q(state.column)} AS value").repartition(parallelism) \
            .selectExpr("CAST(spark_partition_id() AS INT) AS subtask", "value")
    file_target = output.file_target(descriptor.kind, operator_state_schema(descriptor), state.name)
    return descriptor, rows.mapInArrow(partial(_write_task, file_target, where), HANDLE_DDL)


def _kind(state) -> str:
    if isinstance(state, BroadcastState):
        return OperatorStateKind.BROADCAST
    return "list" if isinstance(state, OperatorListState) else "union list"


def _broadcast_rows(df, state: BroadcastState, where: str):
    k, v = q(state.key_column), q(state.value_column)
    null = raise_sql(NullKeyError, f"{where}: a row has a null key in column {state.key_column!r}")
    keyed = df.selectExpr(f"CASE WHEN {k} IS NULL THEN {null} ELSE {k} END AS key", f"{v} AS value")
    if state.combine:
        if state.combine == "sum":
            require_numeric(state.value_column, spark_field_type(df, state.value_column), where, "sum")
        agg = {"sum": "sum(value)", "min": "min(value)", "max": "max(value)",
               "any": "first(value, true)"}[state.combine]
        return keyed.groupBy("key").agg(_expr(f"{agg} AS value"))
    dup = raise_sql(DuplicateKeyError, f"{where}: key ", "key", " appears in ", "n",
                    " rows (set combine to sum, min, max or any)")
    counted = keyed.groupBy("key").agg(_expr("count(1) AS n"), _expr("first(value) AS value"))
    return counted.selectExpr("key", f"CASE WHEN n > 1 THEN {dup} ELSE value END AS value")


def _expr(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)


def _write_task(target: FileTarget, what: str, batches):
    sink = SingleFileSink(target, what)
    yield from guarded([sink], lambda: sink.write_all(batches))
