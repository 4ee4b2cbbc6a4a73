"""The local engine: a table decoded in this process by the format layer, without Spark.

A small read (a key lookup, a few rows, an operator state, a small table) pays no JVM start.
It runs the very decoders the Spark Data Sources run in their tasks (Flink splits, statectl's
RocksDB subtasks, its Parquet files, verified as the Spark path verifies them), and gives the
same columns and rows as :class:`SavepointReader.table` with the types Spark shows. Splits
are decoded one after another and a ``limit`` stops the decoding once it has its rows.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.canonical import files_for_range, keyed_schema, operator_state_schema, timers_schema
from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Operator, Savepoint
from statectl.statefmt.vocabulary import Format

from .keyed import _key_filter
from .operator_state import columns as operator_state_columns
from .resolve import KEYED, OPERATOR_STATE, TableChoice, check_operator_state


def local_table(sp: Savepoint, choice: TableChoice, limit: int | None = None) -> pa.Table:
    """The rows of *choice* (at most *limit*), as `SavepointReader.table` gives them."""
    op = choice.operator
    if choice.kind == OPERATOR_STATE:
        state = check_operator_state(op, choice.states[0])
        batches, wanted = _operator_state_batches(sp, op, state), operator_state_columns(state)
        keep = None
    else:
        keys, groups, key_groups = _key_filter(sp, op, choice.keys, None)
        timers = choice.kind != KEYED
        batches = _keyed_batches(sp, op, timers, groups)
        keep = _row_filter(op, keys, groups, choice.states if not timers else ())
        names = list(choice.states) or [s.name for s in op.keyed.states]
        wanted = op.keyed.key_names + ([NAMESPACE_COLUMN] if op.keyed.namespace_type is not None else [])
        wanted += ["timestamp", "domain"] + (["service"] if op.format == Format.FLINK else []) if timers else \
            [c for n in names for c in op.keyed.state(n).columns]
    out, rows = [], 0
    for batch in batches:
        if keep is not None:
            batch = batch.filter(keep(batch))
        batch = batch.select(wanted)
        out.append(batch)
        rows += batch.num_rows
        if limit is not None and rows >= limit:
            break
    table = pa.Table.from_batches(out) if out else None
    if table is None:
        return _empty(sp, op, choice, wanted)
    table = _spark_types(op, table)
    return table.slice(0, limit) if limit is not None else table


def _row_filter(op: Operator, keys, groups, states):
    """A batch's mask: the key filter's keys exactly; with chosen states, rows holding one."""
    if keys is None and not states:
        return None
    names = op.keyed.key_names

    def keep(batch: pa.RecordBatch) -> pa.Array:
        mask = pa.array([True] * batch.num_rows)
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


def _keyed_batches(sp: Savepoint, op: Operator, timers: bool, groups) -> Iterator[pa.RecordBatch]:
    table = "timers" if timers else "keyed"
    wanted = None if groups is None else set(groups)
    if op.format == Format.FLINK:
        from statectl.statefmt.flink.model import flink_savepoint
        from statectl.statefmt.flink.savepoint import read_split

        info = flink_savepoint(sp).operator(op.operator_id)
        if timers and info.timers_schema is None:
            return
        for split in info.keyed_splits_holding(wanted):
            yield from read_split(split, table, wanted)
    elif op.format == Format.ROCKSDB:
        from statectl.statefmt.rocksdb.files import subtask_databases
        from statectl.statefmt.rocksdb.rows import read_subtask

        for lo, hi in sorted(subtask_databases(op)):
            if wanted is not None and not any(lo <= g <= hi for g in wanted):
                continue
            yield from read_subtask(sp, op, (lo, hi), timers)
    else:
        schema = timers_schema(op.keyed) if timers else keyed_schema(op.keyed)
        files = op.keyed.timers if timers else op.keyed.files
        if wanted is not None:
            files = files_for_range(files, min(wanted), max(wanted))
        yield from _parquet_batches(sp, files, schema)


def _operator_state_batches(sp: Savepoint, op: Operator, state) -> Iterator[pa.RecordBatch]:
    if op.format == Format.FLINK:
        from statectl.statefmt.flink.model import flink_savepoint
        from statectl.statefmt.flink.savepoint import read_split

        info = flink_savepoint(sp).operator(op.operator_id)
        broadcast = info.operator_states[state.name].kind == "broadcast"
        for split in info.operator_splits[:1] if broadcast else info.operator_splits:
            yield from read_split(split, state.name)
    else:
        yield from _parquet_batches(sp, state.files, operator_state_schema(state))


def _parquet_batches(sp: Savepoint, files, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """statectl's own Parquet files, each verified (size, sha256, schema) before it is read."""
    from statectl.statefmt.canonical import check_parquet
    from statectl.statefmt.integrity import verify_file
    from statectl.statefmt.locations import file_location

    for f in files:
        loc = file_location(sp, f.ref)
        verify_file(loc, f)
        with loc.open_input_file() as source:
            pf = check_parquet(loc, source, schema, f)
            for i in range(pf.num_row_groups):
                yield from pf.read_row_group(i).to_batches()


def _spark_types(op: Operator, table: pa.Table) -> pa.Table:
    """The types Spark shows (a Flink table's timestamps in microseconds, ...)."""
    if op.format != Format.FLINK:
        return table
    from statectl.statefmt.flink.model import spark_schema

    target = spark_schema(table.schema)
    return table.cast(target) if target != table.schema else table


def _empty(sp: Savepoint, op: Operator, choice: TableChoice, wanted: list[str]) -> pa.Table:
    """No rows: the columns with the types a read would give."""
    if op.format == Format.FLINK:
        from statectl.statefmt.flink.model import flink_savepoint

        info = flink_savepoint(sp).operator(op.operator_id)
        table = choice.states[0] if choice.kind == OPERATOR_STATE else "keyed" if choice.kind == KEYED else "timers"
        schema = info.table_schema(table)
    elif choice.kind == OPERATOR_STATE:
        schema = operator_state_schema(check_operator_state(op, choice.states[0]))
    else:
        schema = keyed_schema(op.keyed) if choice.kind == KEYED else timers_schema(op.keyed)
    return _spark_types(op, schema.empty_table().select(wanted))


LOCAL_BYTES = 32 * 1024 * 1024  # a table whose files hold at most this many bytes is read locally


def choose_engine(sp: Savepoint, choice: TableChoice, engine: str = "auto", where: str | None = None,
                  limit: int | None = None, master: str | None = None) -> tuple[str, str]:
    """("local" or "spark", why) for reading *choice*: a small read runs in this process."""
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
        return "spark", "--master names a Spark cluster"
    if choice.keys is not None:
        return "local", "a key lookup reads only its keys' key groups"
    if choice.kind == OPERATOR_STATE:
        return "local", "operator state is small"
    if limit is not None:
        return "local", f"--limit {limit} stops after its rows"
    size = sum(f.size for f in _files_of(choice))
    if size <= LOCAL_BYTES:
        return "local", f"the table's files hold {size:,} bytes (local up to {LOCAL_BYTES:,})"
    return "spark", f"the table's files hold {size:,} bytes (more than {LOCAL_BYTES:,})"


def _files_of(choice: TableChoice):
    op = choice.operator
    if choice.kind == OPERATOR_STATE:
        return check_operator_state(op, choice.states[0]).files
    return op.keyed.files if choice.kind == KEYED or op.format != Format.CANONICAL else op.keyed.timers
