"""`rescale` (and `prune`) of a savepoint of statectl's own formats: the plan of one rebuilt operator.

A prune rewrites the keyed table and timers as a new max parallelism does, its rule
(`writers/prune.py`) applied to the tables read; the key groups stay.

A new max parallelism changes every key's group: the keyed table and the timers are read by
Spark, given the group the new max parallelism assigns (``pmod(xxhash64(key), maxP)`` in the
JVM), shuffled to the task of their new key-group chunk and written again in the operator's
format: canonical Parquet, or one RocksDB database per subtask for a native operator (the
native writer's job, :func:`.native.native_job`, over the tables read); values pass through as
Arrow columns. A new parallelism alone keeps the keyed files
(they are indexed by key group); operator list and union state are dealt out again by Flink's
even split; broadcast state is kept as it is.
"""

from __future__ import annotations

from functools import partial

import pyarrow as pa

from statectl.statefmt.canonical import keyed_schema, operator_state_schema, read_file, timers_schema
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.keygroups import even_split, key_group_sql
from statectl.statefmt.locations import file_location
from statectl.statefmt.model import (KEY_GROUP_COLUMN, NAMESPACE_COLUMN, DataFile, KeyedSection, Operator,
                                     OperatorState, Savepoint)
from statectl.statefmt.types import quote_identifier
from statectl.statefmt.vocabulary import Format, OperatorStateKind

from ..partitioning import Chunks
from ..rebuild import Rebuild
from .keyed import KeyedPlan, row_order, timer_row_order
from .native import NativeTarget, encoding_order, native_job, subtask_chunks
from .operators import OperatorPlan, chunked_job, target_tasks
from .sinks import HANDLE_DDL, FileTarget, OperatorOutput, SingleFileSink, guarded


def plan_rescaled(reader, rebuild: Rebuild, copy: Operator, output: OperatorOutput) -> OperatorPlan:
    """The plan writing *rebuild*'s operator again: *copy* is its shallow copy, whose files the
    plan's jobs may replace (those not rewritten stay shallow copies); *reader* reads the base."""
    op = copy.replace(max_parallelism=rebuild.max_parallelism, parallelism=rebuild.parallelism)
    rewrites = rebuild.rekeys or rebuild.prune is not None
    plan = OperatorPlan(op, replaced=set())
    if rewrites:
        _rekey_jobs(reader, rebuild, output, plan)
    if rebuild.redistributes:
        for state in op.operator_states:
            if state.kind in (OperatorStateKind.LIST, OperatorStateKind.UNION) and state.files:
                original = rebuild.operator.operator_state(state.name)
                plan.add_job(f"{state.kind} state {state.name} of {op.label}",
                             _redistribute_job(reader.spark, reader.savepoint, original, rebuild.parallelism, output),
                             ("state", state.name))
    return plan


def _rekey_jobs(reader, choice: Rebuild, output: OperatorOutput, plan: OperatorPlan) -> None:
    op, section = choice.operator, choice.operator.keyed
    native = op.format == Format.ROCKSDB
    chunks = subtask_chunks(choice.max_parallelism, choice.parallelism) if native else \
        Chunks.plan(choice.max_parallelism, choice.parallelism, target_tasks(reader.spark))
    regroup = key_group_sql(section.key_names, choice.max_parallelism)
    ref = OperatorRef(operator_id=op.operator_id)
    tables = {}
    keyed = reader.keyed(ref) if section.files else None
    if keyed is not None:
        tables["keyed"] = keyed if choice.prune is None else choice.prune.keyed(keyed)
    if section.timers or native:  # native databases hold their timers
        timers = reader.timers(ref)
        if choice.prune is not None and keyed is not None:
            timers = choice.prune.timers(timers, keyed)
        tables["timers"] = timers
    tables = {kind: df.selectExpr(f"{regroup} AS {KEY_GROUP_COLUMN}", *map(quote_identifier, df.columns))
              for kind, df in tables.items()}
    if native:
        plan.add_job(f"keyed state and timers of {op.label} (rocksdb)", _native_job(section, tables, output, chunks, op),
                     ("keyed", None), ("timers", None))
        return
    for kind, df in tables.items():
        moved = chunks.distribute(df, sort_by=(KEY_GROUP_COLUMN, *section.key_names))
        schema = keyed_schema(section) if kind == "keyed" else timers_schema(section)
        plan.add_job(f"{'keyed state' if kind == 'keyed' else 'timers'} of {op.label}",
                     chunked_job(moved, output.file_target(kind, schema), chunks, op.label), (kind, None))


def _native_job(section: KeyedSection, tables: dict, output: OperatorOutput, chunks: Chunks, op: Operator):
    """The job writing the native operator's databases from its keyed table and timers, each
    row in its new key group, in the order of their encoded keys (:func:`.native.native_job`)."""
    keys = [(f.name, f.type) for f in section.key]
    if section.namespace_type is not None:
        keys.append((NAMESPACE_COLUMN, section.namespace_type))
    order = row_order(keys, encoding_order)
    plan = KeyedPlan(section.key, section.namespace_type, section.states, tables.get("keyed"), tables.get("timers"),
                     order=tuple(order), timer_order=tuple(timer_row_order(order, encoding_order)),
                     table_placed=False)
    target = NativeTarget(output.file_target("keyed", keyed_schema(section)),
                          output.file_target("timers", timers_schema(section)), section, chunks.ranges,
                          f"operator {op.label}")
    return native_job(plan, target, chunks)


def _redistribute_job(spark, base: Savepoint, state: OperatorState, parallelism: int,
                      output: OperatorOutput):
    """One task reading the state's entries in order and dealing them out to *parallelism*."""
    sources = [(file_location(base, f.ref).uri, f) for f in state.files]
    file_target = output.file_target(state.kind, operator_state_schema(state), state.name)
    what = f"{state.kind} state {state.name!r}"
    return spark.range(1, numPartitions=1).mapInArrow(
        partial(_redistribute_task, file_target, sources, parallelism, what), HANDLE_DDL)


def _redistribute_task(target: FileTarget, sources: list[tuple[str, DataFile]],
                       parallelism: int, what: str, batches):
    for _ in batches:
        pass
    sink = SingleFileSink(target, what)

    def body():
        schema = target.schema
        parts = [read_file(Location(uri), f, schema) for uri, f in sources]
        entries = pa.concat_tables(parts).sort_by([("subtask", "ascending")])  # stable
        n = entries.num_rows
        subtasks = []
        for i in range(parallelism):
            start, stop = even_split(n, parallelism, i)
            subtasks.extend([i] * (stop - start))
        sink.write(entries.set_column(0, "subtask", pa.array(subtasks, pa.int32())))

    yield from guarded([sink], body)
