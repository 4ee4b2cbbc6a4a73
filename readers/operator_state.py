"""Operator list, union and broadcast state.

List state: every subtask's entries, one ``value`` column. Union state: the
union once, as a job restored at parallelism 1 would see it (each stored entry
once, not once per subtask). Broadcast state: one copy of the map, ``key`` and
``value``. The files already hold exactly these rows, so reading is a projection.
"""

from __future__ import annotations

from statectl.statefmt.canonical import operator_state_schema
from statectl.statefmt.model import Operator, OperatorState, Savepoint
from statectl.statefmt.vocabulary import Format, OperatorStateKind

from .files import read_splits, splits


def columns(state: OperatorState) -> list[str]:
    return ["key", "value"] if state.kind == OperatorStateKind.BROADCAST else ["value"]


def operator_state_table(spark, sp: Savepoint, state: OperatorState, verify=None):
    """(DataFrame, splits) of one operator state; *verify* sees the splits before Spark does."""
    op = _flink_owner(sp, state)
    if op is not None:
        from .flink import flink_operator_state

        parts = splits(sp, state.files, None)  # size only: Flink keeps no checksums
        if verify is not None:
            verify(parts)
        return flink_operator_state(spark, sp, op, state.name).select(*columns(state)), parts
    schema = operator_state_schema(state)
    parts = splits(sp, state.files, schema)
    if verify is not None:
        verify(parts)
    return read_splits(spark, schema, parts).select(*columns(state)), parts


def _flink_owner(sp: Savepoint, state: OperatorState) -> Operator | None:
    """The Flink operator holding *state*, or None for statectl's own format."""
    return next((op for op in sp.operators if op.format == Format.FLINK
                 and any(s is state for s in op.operator_states)), None)
