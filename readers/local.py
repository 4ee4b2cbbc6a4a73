"""The local engine: a table decoded in this process by the format layer, without Spark.

A read with no Spark SQL in it (a key lookup, a few rows, a whole table of any size) pays no
JVM start.
It decodes the splits the Spark Data Source makes its partitions of, with the same table
source's decoder (`readers.tablesource`: Flink splits, statectl's RocksDB subtasks, its
Parquet files, verified as the Spark path verifies them), and gives the same columns and
rows as :class:`SavepointReader.table` with the types Spark shows. Splits are decoded one
after another, batch by batch (`local_batches`: a writer takes each batch as it comes, so
memory holds a batch, not the table), and a ``limit`` stops the decoding once it has its rows.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.jit import walk_compiled
from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Operator, Savepoint

from .keys import key_filter
from .operator_state import columns as operator_state_columns
from .resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice, check_operator_state
from .sources import table_source
from .tablesource import TableSource, span_mask


def local_table(sp: Savepoint, choice: TableChoice, limit: int | None = None,
                include_key_group: bool = False,
                key_groups: tuple[int, int] | None = None) -> pa.Table:
    """The rows of *choice* (at most *limit*), as `SavepointReader.table` gives them; with
    *include_key_group*, a keyed table's or timers' ``_key_group`` first, and with *key_groups*
    ``(first, last)`` only that range of key groups, as `SavepointReader.keyed` gives them."""
    schema, batches = local_batches(sp, choice, limit, include_key_group, key_groups)
    return pa.Table.from_batches(list(batches), schema)


def local_batches(sp: Savepoint, choice: TableChoice, limit: int | None = None,
                  include_key_group: bool = False,
                  key_groups: tuple[int, int] | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """:func:`local_table`'s rows as (schema, batches), each batch decoded only when the one
    before it has been taken: a reader that writes each batch as it comes holds one split's
    batch at a time, whatever the table's size."""
    source = table_source(sp, choice.operator)
    keys, groups, span = key_filter(source, choice.keys, key_groups)
    if groups is None and span is None and limit is None:
        walk_compiled()  # a whole table
    keep = row_filter(choice.operator, keys, groups, choice.states if choice.kind == KEYED else (),
                       span if choice.kind != OPERATOR_STATE else None)
    wanted = table_columns(source, choice)
    if include_key_group and choice.kind != OPERATOR_STATE:
        wanted = [KEY_GROUP_COLUMN, *wanted]
    schema = spark_types(source, source.schema(choice.table).empty_table().select(wanted)).schema

    def batches() -> Iterator[pa.RecordBatch]:
        left = limit
        for batch in _batches(source, choice.table, groups, span, keys):
            if keep is not None:
                batch = batch.filter(keep(batch))
            batch = batch.select(wanted)
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield batch.cast(schema) if batch.schema != schema else batch
            if left == 0:
                return
    return schema, batches()


def _batches(source: TableSource, table: str, groups, span, keys) -> Iterator[pa.RecordBatch]:
    """The batches of every split of the read, decoded one after another."""
    for split in source.splits(table, groups, span):
        yield from source.decode(split, table, groups, keys)


def table_columns(source: TableSource, choice: TableChoice) -> list[str]:
    """The columns `SavepointReader.table` shows for *choice*."""
    op = choice.operator
    if choice.kind == OPERATOR_STATE:
        return operator_state_columns(check_operator_state(op, choice.states[0]))
    if choice.kind == TIMERS:
        return op.keyed.key_names + source.timer_namespace() + list(source.timer_columns)
    wanted = op.keyed.key_names + ([NAMESPACE_COLUMN] if op.keyed.namespace_type is not None else [])
    names = list(choice.states) or [s.name for s in op.keyed.states]
    return wanted + [c for n in names for c in op.keyed.state(n).columns]


def row_filter(op: Operator, keys, groups, states, span=None):
    """A batch's mask: the key filter's keys exactly; with chosen states, rows holding one;
    with a *span* ``(first, last)``, rows of those key groups."""
    if keys is None and not states and span is None:
        return None
    names = op.keyed.key_names

    def keep(batch: pa.RecordBatch) -> pa.Array:
        mask = pa.array([True] * batch.num_rows)
        if span is not None:
            mask = span_mask(batch, span)
        if keys is not None:
            column = batch.column(KEY_GROUP_COLUMN)
            in_groups = pc.is_in(column, pa.array(groups or [], column.type))
            match = None
            for key in keys:
                one = None
                for name, value in zip(names, key):
                    eq = pc.equal(batch.column(name), pa.scalar(value).cast(batch.schema.field(name).type))
                    one = eq if one is None else pc.and_(one, eq)
                match = one if match is None else pc.or_(match, one)
            mask = pc.and_(mask, pc.and_(in_groups, pc.fill_null(match, False)))
        if states:
            present = None
            for name in states:
                valid = pc.is_valid(batch.column(name))
                present = valid if present is None else pc.or_(present, valid)
            mask = pc.and_(mask, present)
        return mask
    return keep


def spark_types(source: TableSource, table: pa.Table) -> pa.Table:
    """The types Spark shows (a Flink table's timestamps in microseconds, ...)."""
    target = source.spark_types(table.schema)
    return table.cast(target) if target != table.schema else table


def choose_engine(sp: Savepoint, choice: TableChoice, engine: str = "auto", where: str | None = None,
                  limit: int | None = None, master: str | None = None) -> tuple[str, str]:
    """("local" or "spark", why) for reading *choice*: every read the local engine can stream
    (no Spark SQL condition, no cluster named) runs in this process, whatever its size."""
    from statectl.statefmt.errors import UsageError

    if engine not in ("auto", "local", "spark"):
        raise UsageError(f"--engine must be auto, local or spark, got {engine!r}")
    if where is not None:
        if engine == "local":
            raise UsageError("--where is a Spark SQL condition: it needs --engine spark (or auto)")
        return "spark", "--where is evaluated by Spark"
    if engine != "auto":
        return engine, f"--engine {engine}"
    if master is not None:
        return "spark", "a Spark engine is named (--master or --remote)"
    if choice.keys is not None:
        return "local", "a key lookup reads only its keys' key groups"
    if choice.kind == OPERATOR_STATE:
        return "local", "operator state is small"
    if limit is not None:
        return "local", f"--limit {limit} stops after its rows"
    size = sum(f.size for f in table_files(sp, choice))
    return "local", f"decoded in this process batch by batch ({size:,} bytes of files)"


def table_files(sp: Savepoint, choice: TableChoice):
    """The files `_metadata` lists for the table *choice* reads."""
    return table_source(sp, choice.operator).table_files(choice.table)
