"""Value and list state gathered per key inside the writing task, in Arrow.

For operators whose keyed states are all plain value states and unordered
list states, Spark only partitions the rows by key-group chunk and sorts them
by (key group, key, namespace): no Spark aggregate. Each task then finds the
runs of equal keys in its sorted batches and builds every state column with
vectorized Arrow and numpy operations: a run's one value, or its non-null
values as a list (null when there are none). A value state given two rows of
one key fails the write, with the same message the Spark plan raises.

This is the same result as :mod:`statectl.writers.own.keyed`'s aggregate plan, for less
work: a Spark sort-based aggregate with ``collect_list`` costs about as much as
the sort itself.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.vocabulary import StateKind

from ..errors import DuplicateKeyError



@dataclass(frozen=True)
class GroupedState:
    """One state built from the rows of a run: ``column`` of the rows tagged ``tag`` (all if None)."""

    name: str
    kind: StateKind  # VALUE or LIST
    column: str
    tag: int | None
    where: str  # "operator 'u', value state 's'": how errors name the state


@dataclass(frozen=True)
class TaskGrouping:
    """How a task turns sorted input rows into keyed-table rows (picklable: sent to tasks)."""

    group_columns: tuple[str, ...]  # _key_group, key columns, [namespace]
    key: tuple[str, ...]
    tag_column: str
    states: tuple[GroupedState, ...]

    def tables(self, batches) -> Iterator[pa.Table]:
        """One keyed-table piece per input batch; a key's rows never span two pieces."""
        runs = Runs(self)
        for batch in batches:
            piece = runs.push(batch)
            if piece is not None:
                yield piece
        piece = runs.end()
        if piece is not None:
            yield piece

    def _run_starts(self, rows: pa.Table) -> np.ndarray:
        """The index of the first row of every run of equal (key group, key, namespace)."""
        n = rows.num_rows
        changed = np.zeros(n, dtype=bool)
        changed[0] = True
        if n > 1:
            for name in self.group_columns:
                column = rows.column(name)
                before, after = column.slice(0, n - 1), column.slice(1)
                differs = pc.fill_null(pc.not_equal(before, after), False)
                one_null = pc.xor(pc.is_null(before), pc.is_null(after))
                changed[1:] |= pc.or_(differs, one_null).to_numpy(zero_copy_only=False)
        return np.flatnonzero(changed)

    def _group(self, rows: pa.Table, starts: np.ndarray) -> pa.Table:
        is_start = np.zeros(rows.num_rows, dtype=bool)
        is_start[starts] = True
        run_of_row = np.cumsum(is_start) - 1
        heads = pa.array(starts)
        columns = {name: rows.column(name).take(heads) for name in self.group_columns}
        tags = rows.column(self.tag_column).to_numpy(zero_copy_only=False) \
            if self.tag_column in rows.column_names else None
        for state in self.states:
            mine = np.ones(rows.num_rows, dtype=bool) if state.tag is None or tags is None \
                else tags == state.tag
            values = rows.column(state.column).combine_chunks()
            if state.kind == StateKind.VALUE:
                columns[state.name] = self._value(state, values, mine, run_of_row, rows, starts)
            else:
                columns[state.name] = _list(values, mine, run_of_row, len(starts))
        return pa.table(columns)

    def _value(self, state, values, mine, run_of_row, rows, starts) -> pa.Array:
        runs = len(starts)
        counts = np.bincount(run_of_row[mine], minlength=runs)
        if (counts > 1).any():
            run = int(np.flatnonzero(counts > 1)[0])
            key = key_repr({k: rows.column(k)[int(starts[run])] for k in self.key})
            raise DuplicateKeyError(
                f"{state.where}: key {key} has {int(counts[run])} rows; a value state holds "
                "one value per key (set combine to sum, min, max or any)")
        row_of_run = np.full(runs, -1, dtype=np.int64)
        row_of_run[run_of_row[mine]] = np.flatnonzero(mine)
        return values.take(pa.array(row_of_run, mask=row_of_run < 0))


class Runs:
    """A :class:`TaskGrouping` fed one batch at a time (where one task groups two streams)."""

    def __init__(self, grouping: TaskGrouping):
        self.grouping = grouping
        self.carry: pa.Table | None = None

    def push(self, batch: pa.RecordBatch | pa.Table) -> pa.Table | None:
        """The keyed-table rows of the runs *batch* completes (None if it completes none)."""
        rows = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if self.carry is not None and self.carry.num_rows:
            rows = pa.concat_tables([self.carry, rows])
        if rows.num_rows == 0:
            return None
        starts = self.grouping._run_starts(rows)
        last = int(starts[-1])  # the last run may go on in the next batch
        self.carry = rows.slice(last)
        return self.grouping._group(rows.slice(0, last), starts[:-1]) if last else None

    def end(self) -> pa.Table | None:
        """The rows of the last run."""
        carry, self.carry = self.carry, None
        if carry is None or not carry.num_rows:
            return None
        return self.grouping._group(carry, self.grouping._run_starts(carry))


def _list(values: pa.Array, mine: np.ndarray, run_of_row: np.ndarray, runs: int) -> pa.Array:
    """Per run, its rows' non-null values in row order; null where there are none."""
    kept = mine & values.is_valid().to_numpy(zero_copy_only=False)
    counts = np.bincount(run_of_row[kept], minlength=runs)
    offsets = np.zeros(runs + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values.filter(pa.array(kept)),
                                    mask=pa.array(counts == 0))


def key_repr(key: dict[str, pa.Scalar]) -> str:
    """A key as ``user=alice, n=3``, each value shown as Spark's ``CAST(v AS STRING)`` shows it.

    The Python twin of :func:`statectl.writers.sql.key_repr_sql`, so both plans name a key alike.
    """
    return ", ".join(f"{name}={_spark_string(value)}" for name, value in key.items())


def _spark_string(scalar: pa.Scalar) -> str:
    value = scalar.as_py()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, _dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return (text + f".{value.microsecond:06d}".rstrip("0")) if value.microsecond else text
    if isinstance(value, _dt.date):
        return value.isoformat()
    return str(value)
