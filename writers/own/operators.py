"""One new operator: plan its Spark jobs, run them, and describe the result."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from statectl.statefmt.canonical import keyed_schema, timers_schema
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import KeyedSection, Operator, OperatorState
from statectl.statefmt.vocabulary import Format

from ..definitions import KeyedData, KeyedFunction, OperatorData
from ..job import WriteSession
from ..partitioning import Chunks
from .function import plan_function
from .grouping import TaskGrouping
from .keyed import plan_keyed
from .native import NativeTarget, check_databases, encoding_order, native_job, subtask_chunks
from .operator_state import plan_operator_state
from .sinks import HANDLE_DDL, ChunkedSink, FileTarget, guarded, output_of, run_job


@dataclass
class OperatorPlan:
    """The operator's metadata, and the jobs (DataFrames of handles) that write its files.

    ``replaced`` is None for a new operator: every file comes from the jobs.
    Otherwise the operator already has files (a shallow copy) and ``replaced``
    names the ``(kind, state name)`` whose files the jobs write anew; the
    others are kept as they are.
    """

    operator: Operator
    jobs: list[tuple[str, object]] = field(default_factory=list)  # (description, DataFrame)
    replaced: set[tuple[str, str | None]] | None = None

    def add_job(self, description: str, df, *replaces: tuple[str, str | None]) -> None:
        """A job writing new files for *replaces* (``("keyed", None)``, ``("state", name)``...)."""
        self.jobs.append((description, df))
        self.replaced = (self.replaced or set()) | set(replaces)

    def _files(self, kind: str, state: str | None, current: tuple, written: list) -> tuple:
        if self.replaced is None or (kind, state) in self.replaced:
            return _by_range(written) if kind in ("keyed", "timers") else \
                tuple(sorted(written, key=lambda f: f.ref.path))
        return current

    def run(self, session: WriteSession) -> Operator:
        keyed, timers, states = [], [], {}
        for description, df in self.jobs:
            for handle, data_file in run_job(session, df, description):
                if handle["kind"] == "keyed":
                    keyed.append(data_file)
                elif handle["kind"] == "timers":
                    timers.append(data_file)
                else:
                    states.setdefault(handle["state"], []).append(data_file)
        op = self.operator
        if op.format == Format.ROCKSDB:
            check_databases(keyed, f"operator {op.label}")
        section = op.keyed
        if section is not None:
            section = KeyedSection(section.key, section.states,
                                   self._files("keyed", None, section.files, keyed),
                                   self._files("timers", None, section.timers, timers),
                                   section.namespace_type)
        op_states = tuple(
            OperatorState(s.name, s.kind, s.value_type,
                          self._files("state", s.name, s.files, states.get(s.name, [])), s.key_type)
            for s in op.operator_states
        )
        return op.replace(keyed=section, operator_states=op_states)


def _by_range(files) -> tuple:
    return tuple(sorted(files, key=lambda f: (f.key_groups, f.name or "")))


def target_tasks(spark) -> int:
    """How many tasks to spread one operator's keyed state over: one per core of the cluster.

    ``spark.statectl.writeTasks`` overrides it.
    """
    conf = spark.conf.get("spark.statectl.writeTasks", None)
    if conf:
        return int(conf)
    from statectl.readers.files import default_parallelism

    return default_parallelism(spark)


def plan_operator(data: OperatorData, max_parallelism: int, fmt: str,
                  session: WriteSession) -> OperatorPlan:
    op_id = operator_id_for_uid(data.uid)
    output = output_of(session, op_id)
    native = fmt == Format.ROCKSDB
    chunks = subtask_chunks(max_parallelism, data.parallelism) if native else \
        Chunks.plan(max_parallelism, data.parallelism, target_tasks(session.spark))
    jobs, section = [], None
    if isinstance(data.keyed, KeyedData):
        plan = plan_keyed(data.keyed, data.uid, max_parallelism, chunks, group_in_tasks=True,
                          sort_key=encoding_order if native else None, place=not native)
        section = KeyedSection(plan.key, plan.states, namespace_type=plan.namespace_type)
        keyed = output.file_target("keyed", keyed_schema(section))
        timers = output.file_target("timers", timers_schema(section))
        if native:
            spec = NativeTarget(keyed, timers, section, chunks.ranges, f"operator {data.uid!r}")
            jobs.append((f"keyed state and timers of {data.uid} (rocksdb)",
                         native_job(plan, spec, chunks)))
        if plan.table is not None and not native:
            jobs.append((f"keyed state of {data.uid}",
                         chunked_job(plan.table, keyed, chunks, data.uid, plan.grouping)))
        if plan.timers is not None and not native:
            jobs.append((f"timers of {data.uid}",
                         chunked_job(plan.timers, timers, chunks, data.uid, plan.timer_grouping)))
    elif isinstance(data.keyed, KeyedFunction):
        section, df = plan_function(data.keyed, data.uid, max_parallelism, chunks, output, native)
        jobs.append((f"keyed state of {data.uid} (per-key function)", df))
    states = []
    for state in data.operator_states:
        descriptor, df = plan_operator_state(state, data.uid, data.parallelism, output)
        states.append(descriptor)
        jobs.append((f"{descriptor.kind} state {state.name} of {data.uid}", df))
    # operator states are canonical files in either format (FORMAT.md §12)
    operator = Operator(op_id, data.uid, data.parallelism, max_parallelism, section,
                        tuple(states), fmt if section is not None else Format.CANONICAL)
    return OperatorPlan(operator, jobs)


def chunked_job(df, target: FileTarget, chunks: Chunks, uid: str,
                grouping: TaskGrouping | None = None):
    """A job writing *df* (partitioned by chunk, sorted by key group) as one file per chunk.

    With a *grouping*, *df*'s rows are first grouped per key in the task.
    """
    what = f"operator {uid!r}, {target.kind}"
    return df.mapInArrow(partial(_write_chunked, target, chunks.ranges, what, grouping),
                         HANDLE_DDL)


def _write_chunked(target: FileTarget, ranges, what: str, grouping, batches):
    sink = ChunkedSink(target, ranges, what)
    rows = grouping.tables(batches) if grouping is not None else batches
    yield from guarded([sink], lambda: sink.write_all(rows))
