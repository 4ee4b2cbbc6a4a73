"""Rescaling: keyed state for a new max parallelism, state for a new parallelism.

For each chosen keyed operator:

* a new **max parallelism** changes every key's group, so the keyed table and
  the timers are read by Spark, given the group the new max parallelism
  assigns (``pmod(xxhash64(key), maxP)`` in the JVM), shuffled to the task of
  their new key-group chunk and written again. Values pass through as Arrow
  columns; nothing is decoded in Python and nothing reaches the driver.
* a new **parallelism** alone changes no key's group: the keyed files are kept
  where they lie (shallow copies), since files are indexed by key group and a
  subtask reads its range from whichever files meet it.
* when the parallelism changes, operator **list** state is dealt out again by
  Flink's even split and **union** state spread the same way (one copy kept);
  **broadcast** state, identical everywhere, is kept as it is.

Every other operator is a shallow copy. A Flink savepoint is rescaled by
:mod:`.flink.rescale` (Flink's key hash, the base's serializers, the Flink writer).
:class:`Rescale` loads the savepoint and chooses its operators once (no Spark), then
writes; each chosen operator is a :class:`RescaledOperator` (a Flink one a
:class:`~.flink.rescale.FlinkRescaledOperator`), the named kind of rebuild
`SavepointWriter.with_rebuilt` takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pyarrow as pa

from statectl.statefmt.canonical import keyed_schema, operator_state_schema, read_file, timers_schema
from statectl.statefmt.errors import UnknownStateError, UnreadableStateError, UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.keygroups import (
    check_max_parallelism,
    check_parallelism,
    even_split,
    key_group_sql,
)
from statectl.statefmt.model import (KEY_GROUP_COLUMN, KEYED_PART, DataFile, Operator, OperatorState, Savepoint,
                                     cannot_read)
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.types import quote_identifier
from statectl.statefmt.vocabulary import Format, OperatorStateKind

from .operators import OperatorPlan, chunked_job, target_tasks
from .partitioning import Chunks
from .report import WriteReport
from .savepoint_writer import SavepointWriter, is_flink
from .tasks import HANDLE_DDL, FileTarget, OperatorOutput, SingleFileSink, guarded


@dataclass(frozen=True)
class RescaleChoice:
    """One operator to rescale, with its old and new limits."""

    operator: Operator
    max_parallelism: int
    parallelism: int

    @property
    def rekeys(self) -> bool:
        return self.max_parallelism != self.operator.max_parallelism

    @property
    def redistributes(self) -> bool:
        return self.parallelism != self.operator.parallelism


def choose_operators(sp: Savepoint, max_parallelism: int, parallelism: int | None,
                     operators: list[str | OperatorRef] | None) -> list[RescaleChoice]:
    """The keyed operators to rescale (all of them when *operators* is empty: each a uid, or an
    :class:`OperatorRef` naming it by uid, operator id or name), limits checked."""
    check_max_parallelism(max_parallelism)
    for op in sp.operators if not operators else [sp.operator(ref) for ref in operators]:
        part = op.unreadable_part(KEYED_PART)
        if part is not None:  # its key groups cannot be moved, nor left at the old max parallelism
            raise UnreadableStateError(f"cannot rescale: {cannot_read(op.label, KEYED_PART, part.reason)}")
    if operators:
        ops = []
        for ref in operators:
            op = sp.operator(ref)
            if op.keyed is None:
                raise UnknownStateError(
                    f"operator {op.label} has no keyed state to rescale; "
                    f"keyed operators: {_keyed_labels(sp)}")
            if op not in ops:
                ops.append(op)
    else:
        ops = [op for op in sp.operators if op.keyed is not None]
        if not ops:
            raise UnknownStateError(f"{sp.location} has no keyed operator to rescale")
    choices = []
    for op in ops:
        p = parallelism if parallelism is not None else op.parallelism
        if parallelism is None and p > max_parallelism:
            raise UsageError(
                f"operator {op.label} runs at parallelism {p}, more than the new max parallelism "
                f"{max_parallelism}; give a new parallelism too")
        check_parallelism(p, max_parallelism)
        choices.append(RescaleChoice(op, max_parallelism, p))
    return choices


def _keyed_labels(sp: Savepoint) -> str:
    labels = [op.label for op in sp.operators if op.keyed is not None]
    return ", ".join(labels) if labels else "(none)"


@dataclass(frozen=True)
class Rescale:
    """A savepoint to rescale, loaded and its operators chosen once (no Spark needed)."""

    base: Savepoint
    choices: tuple[RescaleChoice, ...]

    @classmethod
    def of(cls, source: "str | Savepoint", max_parallelism: int, parallelism: int | None = None,
           operators: list[str | OperatorRef] | None = None) -> "Rescale":
        """Load *source* and choose its *operators* (see :func:`choose_operators`); bad limits
        or unknown operators fail here."""
        base = source if isinstance(source, Savepoint) else load(source)
        choices = tuple(choose_operators(base, max_parallelism, parallelism, operators))
        if is_flink(base):
            from .flink.rescale import check_flink_rescale
            check_flink_rescale(base, choices)
        return cls(base, choices)

    def write(self, spark, output: str, self_contained: bool = False, on_job=None,
              overwrite: bool = False) -> WriteReport:
        """Write the rescaled savepoint to *output*; the base is only read."""
        if is_flink(self.base):
            from .flink.rescale import FlinkRescaledOperator
            writer = SavepointWriter(self.base, format=Format.FLINK)
            rebuilds = [FlinkRescaledOperator(spark, choice) for choice in self.choices]
        else:
            writer = SavepointWriter(self.base)
            rebuilds = [RescaledOperator(spark, self.base, choice) for choice in self.choices]
        for rebuild in rebuilds:
            writer.with_rebuilt(rebuild)
        return writer.write(output, spark, self_contained=self_contained, on_job=on_job,
                            overwrite=overwrite)


def rescale(spark, source: str, output: str, max_parallelism: int,
            parallelism: int | None = None, operators: list[str | OperatorRef] | None = None,
            self_contained: bool = False, on_job=None, overwrite: bool = False) -> WriteReport:
    """Write *source* rescaled to *output*; see the module doc. *source* is only read."""
    return Rescale.of(source, max_parallelism, parallelism, operators).write(
        spark, output, self_contained, on_job, overwrite)


@dataclass(frozen=True)
class RescaledOperator:
    """One base operator rescaled: a rebuild for `SavepointWriter.with_rebuilt`."""

    spark: object
    base: Savepoint
    choice: RescaleChoice
    action = "rescaled"

    @property
    def operator(self) -> Operator:
        return self.choice.operator

    def plan(self, copy: Operator, output: OperatorOutput) -> OperatorPlan:
        """The plan for the operator: *copy* is its shallow copy, whose files it may replace."""
        spark, base, choice = self.spark, self.base, self.choice
        op = copy.replace(max_parallelism=choice.max_parallelism, parallelism=choice.parallelism)
        if choice.rekeys:  # rewritten keyed state is canonical, whatever it was before
            op = op.replace(format=Format.CANONICAL)
        plan = OperatorPlan(op, replaced=set())  # files not rewritten stay shallow copies
        if choice.rekeys:
            _rekey_jobs(spark, base, choice, output, plan)
        if choice.redistributes:
            for state in op.operator_states:
                if state.kind in (OperatorStateKind.LIST, OperatorStateKind.UNION) and state.files:
                    original = choice.operator.operator_state(state.name)
                    plan.add_job(f"{state.kind} state {state.name} of {op.label}",
                                 _redistribute_job(spark, base, original, choice.parallelism, output),
                                 replaces=("state", state.name))
        return plan


def _rekey_jobs(spark, base: Savepoint, choice: RescaleChoice, output: OperatorOutput,
                plan: OperatorPlan) -> None:
    from statectl.readers import open_savepoint

    op, section = choice.operator, choice.operator.keyed
    reader = open_savepoint(spark, base)
    chunks = Chunks.plan(choice.max_parallelism, choice.parallelism, target_tasks(spark))
    regroup = key_group_sql(section.key_names, choice.max_parallelism)
    ref = OperatorRef(operator_id=op.operator_id)
    tables = []
    if section.files:
        tables.append(("keyed", reader.keyed(ref), keyed_schema(section)))
    if section.timers or op.format != Format.CANONICAL:  # native databases hold their timers
        tables.append(("timers", reader.timers(ref), timers_schema(section)))
    for kind, df, schema in tables:
        moved = chunks.distribute(df.selectExpr(f"{regroup} AS {KEY_GROUP_COLUMN}", *map(quote_identifier, df.columns)),
                                  sort_by=(KEY_GROUP_COLUMN, *section.key_names))
        file_target = output.file_target(kind, schema)
        plan.add_job(f"{'keyed state' if kind == 'keyed' else 'timers'} of {op.label}",
                     chunked_job(moved, file_target, chunks, op.label), replaces=(kind, None))


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


__all__ = ["rescale", "Rescale", "RescaledOperator", "choose_operators", "RescaleChoice"]
