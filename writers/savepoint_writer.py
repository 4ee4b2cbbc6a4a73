"""SavepointWriter: a new savepoint, or one derived from an existing savepoint.

Like Flink's ``SavepointWriter``: start from nothing (``new``) or from a base
(``from_existing``), add or replace operators with data, remove operators,
change uids, then ``write``. Operators of the base left untouched become
shallow copies that reference the base's files; ``self_contained`` copies
those files instead. Data files are written by Spark tasks; the driver gets
only their handles and writes `_metadata` last. If anything fails, every file
this write created is removed and the output holds no savepoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from statectl.statefmt.errors import UnknownOperatorError, UsageError
from statectl.statefmt.ids import OperatorRef, operator_id_for_uid
from statectl.statefmt.keygroups import check_max_parallelism, check_parallelism, default_max_parallelism
from statectl.statefmt.formats import load
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.savepoint import (
    check_output,
    commit,
    merge_lineage,
    new_savepoint_id,
    now_iso,
    prune_lineage,
    shallow_copy,
)
from statectl.statefmt.vocabulary import Format

from .copying import make_self_contained
from .definitions import KeyedData, OperatorData
from .errors import SpecError
from .job import WriteSession
from .operators import OperatorPlan, plan_operator
from .tasks import OperatorOutput


@dataclass
class OperatorReport:
    uid: str | None
    operator_id: str
    action: str  # written | shallow copy | renamed
    files: int = 0
    rows: int | None = 0  # None: not recorded (Flink files)
    bytes: int = 0
    states: list[str] = field(default_factory=list)


@dataclass
class WriteReport:
    """What a write did, for the summary at its end."""

    savepoint: Savepoint
    operators: list[OperatorReport]
    removed: list[str]
    copied_files: int = 0
    copied_bytes: int = 0
    removed_leftovers: int = 0


class Rebuild(Protocol):
    """A named kind of write that rewrites some files of one base operator (e.g. a rescale)."""

    action: str  # what the report calls it
    operator: Operator  # the base operator

    def plan(self, copy: Operator, output: OperatorOutput) -> OperatorPlan:
        """The jobs writing the files that replace some of *copy*'s (its shallow copy)."""


def is_flink(base: Savepoint | None) -> bool:
    return base is not None and any(op.format == Format.FLINK for op in base.operators)


def check_writable_base(base: Savepoint) -> None:
    """Refuse a Flink base for writes that rebuild its operators in statectl's own format."""
    if is_flink(base):
        raise UsageError(f"{base.location} is a Flink savepoint: its operators are rebuilt by the Flink "
                         "writer (rescale, or bootstrap --base --format flink), not in statectl's own format")


def check_base_format(base: Savepoint | None, format: str, new_uids, removed_or_renamed: bool = False) -> None:
    """A derived savepoint points at its base's files, so both must be of one format family; the
    other family is fine when every operator of the base is in the spec (nothing to point at)."""
    if base is None or is_flink(base) == (format == Format.FLINK):
        return
    new_ids = {operator_id_for_uid(uid) for uid in new_uids}
    kept = [op.label for op in base.operators if op.operator_id not in new_ids]
    if kept:
        base_kind, out_kind, use = ("a Flink", f"statectl's {format}", "flink") if is_flink(base) \
            else ("a statectl", "Flink", Format.CANONICAL)
        raise UsageError(f"{base.location} is {base_kind} savepoint and the output would be {out_kind}: "
                         f"operator(s) {', '.join(kept)} not in the spec cannot be shallow copies of it; "
                         f"write --format {use}, or give them in the spec")
    if removed_or_renamed:
        raise UsageError("removing or renaming operators needs a base of the written format")


class SavepointWriter:
    """Build a savepoint from DataFrames, optionally on top of an existing one."""

    def __init__(self, base: Savepoint | None = None, max_parallelism: int | None = None,
                 format: str = Format.CANONICAL):
        if format not in Format.own():
            *first, last = Format.own()
            raise UsageError(f"unknown physical format {format!r}; use {', '.join(first)} or {last}")
        if max_parallelism is not None:
            check_max_parallelism(max_parallelism)
        self.base = base
        self.max_parallelism = max_parallelism
        self.format = format
        self._new: dict[str, OperatorData] = {}
        self._removed: list[str] = []  # operator ids
        self._renamed: dict[str, str] = {}  # operator id -> new uid
        self._rebuilt: dict[str, Rebuild] = {}  # operator id -> its rebuild

    @classmethod
    def new(cls, max_parallelism: int | None = None, format: str = Format.CANONICAL) -> "SavepointWriter":
        """An empty savepoint; *max_parallelism* is the default of its operators."""
        return cls(None, max_parallelism, format)

    @classmethod
    def from_existing(cls, location: str, max_parallelism: int | None = None,
                      format: str = Format.CANONICAL) -> "SavepointWriter":
        """A savepoint derived from the one at *location*, which is only ever read."""
        return cls(load(location), max_parallelism, format)

    # --- building -----------------------------------------------------------------
    def with_operator(self, operator: OperatorData) -> "SavepointWriter":
        """Add *operator*, or replace the base's operator with the same uid."""
        if operator.uid in self._new:
            raise SpecError(f"operator {operator.uid!r} is given twice")
        operator.check()
        if operator.flink is not None and self.format != Format.FLINK:
            raise SpecError(f"operator {operator.uid!r}: a flink: type binding needs format flink")
        states = operator.keyed.states if isinstance(operator.keyed, KeyedData) else ()
        with_ttl = [s.name for s in states if getattr(s, "ttl_column", None)]
        if with_ttl and self.format != Format.FLINK:
            raise SpecError(f"operator {operator.uid!r}, state {with_ttl[0]!r}: ttl_column is for the TTL "
                            "states of a Flink savepoint (format flink)")
        self._new[operator.uid] = operator
        return self

    def remove_operator(self, operator: str | OperatorRef) -> "SavepointWriter":
        """Drop an operator of the base (by uid, or by operator id when it has none)."""
        op = self._base_operator(operator)
        if op.operator_id in self._removed:
            raise UsageError(f"operator {op.label} is removed twice")
        self._removed.append(op.operator_id)
        return self

    def rename_operator(self, operator: str | OperatorRef, new_uid: str) -> "SavepointWriter":
        """Give an operator of the base a new uid (and so a new operator id); its files stay."""
        op = self._base_operator(operator)
        if op.operator_id in self._renamed:
            raise UsageError(f"operator {op.label} is renamed twice")
        if not new_uid:
            raise UsageError("a new uid cannot be empty")
        self._renamed[op.operator_id] = new_uid
        return self

    def with_rebuilt(self, rebuild: Rebuild) -> "SavepointWriter":
        """Rewrite some files of a base operator as *rebuild* plans, keeping the rest as
        shallow copies."""
        if self.base is None:
            raise UsageError("rebuilding an operator needs a base savepoint")
        check_writable_base(self.base)
        self._rebuilt[rebuild.operator.operator_id] = rebuild
        return self

    def _base_operator(self, operator: str | OperatorRef) -> Operator:
        if self.base is None:
            raise UsageError("removing or renaming operators needs a base savepoint")
        return self.base.operator(operator)

    # --- writing ------------------------------------------------------------------
    def write(self, output: str, spark=None, self_contained: bool = False,
              on_job=None, overwrite: bool = False) -> WriteReport:
        """Write the savepoint to *output* (a new location); Spark is needed for new operators.

        *on_job*, if given, is called with a description before each Spark job.
        *overwrite* replaces a savepoint already at *output* (see :func:`commit`).
        """
        if is_flink(self.base) and not self._new:  # metadata only: remove and rename
            from .flink_modify import write_flink_modification
            done = write_flink_modification(self.base, self._removed, self._renamed, output,
                                            self_contained, overwrite)
            return WriteReport(done.savepoint, [_report(op, action) for op, action in done.operators],
                               done.removed, done.copied_files, done.copied_bytes, done.removed_leftovers)
        check_base_format(self.base, self.format, self._new, bool(self._removed or self._renamed))
        if self.format == Format.FLINK:
            return self._write_flink(output, spark, self_contained, on_job, overwrite)
        kept_from = self.base  # the savepoint whose operators the output keeps
        if is_flink(self.base):  # every operator is in the spec: the base is only an input
            kept_from = None
        out = check_output(output, [self.base], overwrite=overwrite)
        derived = self._derive(kept_from)  # metadata-only part: checked before any file is written
        if self._new and spark is None:
            raise UsageError("writing operators from data needs a Spark session")
        if self._rebuilt and spark is None:
            raise UsageError("rebuilding operators needs a Spark session")
        session = WriteSession(spark, out, on_job)
        plans = [(self._plan(op, session, kept_from), "written") for op in self._new.values()]
        rebuilt_lineage = []
        for op_id, rebuild in self._rebuilt.items():
            copy, needed = shallow_copy(self.base, self.base.operator(OperatorRef(operator_id=op_id)))
            rebuilt_lineage.append(needed)
            plans.append((rebuild.plan(copy, session.output_of(op_id)), rebuild.action))
        session.start()
        try:
            written = [(p.run(session), action) for p, action in plans]
            sp, reports = self._assemble(kept_from, derived, written, rebuilt_lineage)
            copied = (0, 0)
            if self_contained:
                sp, files, size = make_self_contained(sp, out, session.token)
                copied = (files, size)
            sp = commit(sp, out, overwrite=overwrite)
        except BaseException:
            session.fail()
            raise
        session.finish({f.ref.path for _, f in sp.data_files() if not f.ref.is_shared})
        return WriteReport(sp, reports, [self._label(i) for i in self._removed], *copied,
                           removed_leftovers=session.removed_leftovers)

    def _write_flink(self, output: str, spark, self_contained: bool, on_job, overwrite: bool) -> WriteReport:
        """A Flink savepoint: the new operators written by the Flink writer, the base's others
        (a Flink base) shallow pointer copies, or copied with *self_contained*."""
        from .flink import write_flink

        check_output(output, [self.base], overwrite=overwrite)  # never into (or over) the base
        if not is_flink(self.base):  # nothing of it is kept (check_base_format)
            kept, new = (), list(self._new.values())
        else:
            if self._renamed:
                raise UsageError("renaming operators of a Flink savepoint while writing others is not "
                                 "supported; rename them with statectl modify first")
            new_ids = {operator_id_for_uid(uid) for uid in self._new}
            kept = tuple(op.operator_id for op in self.base.operators
                         if op.operator_id not in new_ids and op.operator_id not in self._removed)
            from .flink_source import on_flink_base
            new = [on_flink_base(self.base, op) for op in self._new.values()]
        sp, written, leftovers, files, size = write_flink(
            new, output, spark, self.max_parallelism, on_job, overwrite, base=self.base if is_flink(self.base) else None,
            kept=kept, self_contained_copy=self_contained)
        reports = {r.operator_id: OperatorReport(r.uid, r.operator_id, r.action, r.files, r.rows, r.bytes,
                                                 r.states) for r in written}
        return WriteReport(sp, [reports.get(op.operator_id) or _report(op, "shallow copy") for op in sp.operators],
                           [self._label(i) for i in self._removed], files, size, removed_leftovers=leftovers)

    def _label(self, operator_id: str) -> str:
        return self.base.operator(OperatorRef(operator_id=operator_id)).label

    def _derive(self, base: Savepoint | None) -> list[tuple[str, Operator, str]]:
        """*base*'s operators that stay: (original id, operator, "shallow copy" | "renamed")."""
        if base is None:
            return []
        new_ids = {operator_id_for_uid(uid) for uid in self._new} | set(self._rebuilt)
        kept, seen = [], set(new_ids)
        for op in base.operators:
            original = op.operator_id
            if original in self._removed or original in new_ids:
                continue
            if original in self._renamed:
                uid = self._renamed[original]
                op = op.replace(uid=uid, operator_id=operator_id_for_uid(uid))
                kept.append((original, op, "renamed"))
            else:
                kept.append((original, op, "shallow copy"))
        for _, op, _ in kept:
            if op.operator_id in seen:
                raise UsageError(f"two operators of the output would have uid {op.label!r}")
            seen.add(op.operator_id)
        return kept

    def _plan(self, op: OperatorData, session: WriteSession, base: Savepoint | None) -> OperatorPlan:
        max_p = op.max_parallelism or self.max_parallelism
        if max_p is None and base is not None:
            try:
                max_p = base.operator(OperatorRef(uid=op.uid)).max_parallelism
            except UnknownOperatorError:
                pass
        max_p = max_p or default_max_parallelism(op.parallelism)
        check_parallelism(op.parallelism, max_p)
        return plan_operator(op, max_p, self.format, session)

    def _assemble(self, base: Savepoint | None, derived, written: list[tuple[Operator, str]],
                  extra_lineage=()) -> tuple[Savepoint, list]:
        reports, lineage = [], list(extra_lineage)
        slots: dict[str, Operator] = {}  # base operator id -> what takes its place
        for original, op, action in derived:
            copy, needed = shallow_copy(base, op)
            lineage.append(needed)
            slots[original] = copy
            reports.append(_report(copy, action))
        new = []
        for op, action in written:
            reports.append(_report(op, action))
            if op.operator_id in {o.operator_id for o in (base.operators if base else ())}:
                slots[op.operator_id] = op
            else:
                new.append(op)
        base_order = [o.operator_id for o in base.operators] if base else []
        operators = [slots[i] for i in base_order if i in slots] + new
        sp = Savepoint(new_savepoint_id(), now_iso(), tuple(operators), merge_lineage(*lineage))
        return prune_lineage(sp), reports


def _report(op: Operator, action: str) -> OperatorReport:
    files = list(op.data_files())
    rows = None if any(f.rows is None for f in files) else sum(f.rows for f in files)  # Flink: unknown
    return OperatorReport(op.uid, op.operator_id, action, len(files), rows,
                          sum(f.size for f in files), op.state_names)


__all__ = ["SavepointWriter", "WriteReport", "OperatorReport"]
