"""Operator list, union and broadcast state.

List state: every subtask's entries, one ``value`` column. Union state: the
union once, as a job restored at parallelism 1 would see it (each stored entry
once, not once per subtask). Broadcast state: one copy of the map, ``key`` and
``value``. The table sources give exactly these rows, so reading is a projection.
"""

from __future__ import annotations

from statectl.statefmt.model import Operator, OperatorState, Savepoint
from statectl.statefmt.vocabulary import OperatorStateKind

from .sources import table_source


def columns(state: OperatorState) -> list[str]:
    return ["key", "value"] if state.kind == OperatorStateKind.BROADCAST else ["value"]


def operator_state_table(spark, sp: Savepoint, op: Operator, state: OperatorState, verify=None):
    """(DataFrame, splits) of *op*'s operator state *state*; *verify* sees the splits before Spark does."""
    from .datasource import table_frame

    df, parts = table_frame(spark, table_source(sp, op), state.name, verify=verify)
    return df.select(*columns(state)), parts
