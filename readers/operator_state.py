"""Operator list, union and broadcast state.

List state: every subtask's entries, one ``value`` column. Union state: the
union once, as a job restored at parallelism 1 would see it (each stored entry
once, not once per subtask). Broadcast state: one copy of the map, ``key`` and
``value``. The files already hold exactly these rows, so reading is a projection.
"""

from __future__ import annotations

from statectl.statefmt.canonical import operator_state_schema
from statectl.statefmt.model import OperatorState, Savepoint
from statectl.statefmt.vocabulary import OperatorStateKind

from .files import read_splits, splits


def columns(state: OperatorState) -> list[str]:
    return ["key", "value"] if state.kind == OperatorStateKind.BROADCAST else ["value"]


def operator_state_table(spark, sp: Savepoint, state: OperatorState, verify=None):
    """(DataFrame, splits) of one operator state; *verify* sees the splits before Spark does."""
    schema = operator_state_schema(state)
    parts = splits(sp, state.files, schema)
    if verify is not None:
        verify(parts)
    return read_splits(spark, schema, parts).select(*columns(state)), parts
