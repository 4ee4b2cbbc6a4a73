"""Writing canonical data files from Arrow tables in plain Python (no Spark).

Used by the job-side state backends to snapshot, and by anything that builds
a small savepoint in one process. Spark writers use :class:`canonical.FileWriter`
directly from their tasks instead.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .canonical import (
    conform,
    keyed_schema,
    operator_state_schema,
    sort_by_key_group,
    timers_schema,
    with_key_groups,
    write_file,
)
from .errors import UsageError
from .fs import Location
from .keygroups import check_parallelism, key_group_range
from .model import KEY_GROUP_COLUMN, DataFile, KeyedSection, OperatorState
from .savepoint import data_file_path
from .vocabulary import OperatorStateKind


def write_keyed_files(out: Location, operator_id: str, section: KeyedSection, table: pa.Table,
                      max_parallelism: int, parallelism: int, timers: bool = False
                      ) -> tuple[DataFile, ...]:
    """Write keyed rows (or timer rows) as one file per subtask's key-group range.

    *table* holds the key columns, ``namespace`` if the section has one, and the
    state columns (or ``timestamp`` and ``domain`` for timers); key groups are
    computed here. Empty ranges get no file.
    """
    check_parallelism(parallelism, max_parallelism)
    schema = timers_schema(section) if timers else keyed_schema(section)
    what = "timers" if timers else "keyed state"
    for name in section.key_names:
        if name in table.column_names and table.column(name).null_count:
            raise UsageError(f"{what}: key column {name!r} holds nulls; keys may not be null")
    table = with_key_groups(table, section, max_parallelism)
    table = sort_by_key_group(conform(table, schema, what), section.key_names)
    groups = table.column(KEY_GROUP_COLUMN)
    files = []
    for subtask in range(parallelism):
        first, last = key_group_range(max_parallelism, parallelism, subtask)
        part = table.filter(pc.and_(pc.greater_equal(groups, first), pc.less_equal(groups, last)))
        if part.num_rows:
            path = data_file_path(operator_id, "timers" if timers else "keyed", f"{first}-{last}")
            files.append(write_file(out, path, part, schema, (first, last)))
    return tuple(files)


def write_operator_state_file(out: Location, operator_id: str, state: OperatorState,
                              table: pa.Table) -> DataFile:
    """One file for an operator list, union (``subtask``, ``value``) or broadcast state."""
    schema = operator_state_schema(state)
    table = conform(table, schema, f"operator state {state.name!r}")
    if state.kind == OperatorStateKind.BROADCAST:
        keys = table.column("key")
        if len(pc.unique(keys)) != len(keys):
            raise UsageError(f"broadcast state {state.name!r}: a key appears twice")
    else:
        table = table.sort_by([("subtask", "ascending")])
    return write_file(out, data_file_path(operator_id, f"{state.kind}-state"), table, schema)
