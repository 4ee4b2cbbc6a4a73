"""SavepointWriter: a new savepoint, or one derived from an existing savepoint.

Like Flink's ``SavepointWriter``: start from nothing (``new``) or from a base
(``from_existing``), add or replace operators with data, remove operators,
change uids, then ``write``. Operators of the base left untouched become
shallow copies that reference the base's files; ``self_contained`` copies
those files instead. Data files are written by Spark tasks; the driver gets
only their handles and writes `_metadata` last. If anything fails, every file
this write created is removed and the output holds no savepoint.

``write`` is one transaction for every kind of write (:class:`WriteKind`): statectl's own
format (:mod:`.own_write`), a Flink savepoint written from data or rescaled
(:mod:`.flink.write`), a Flink savepoint's operators removed or renamed (:mod:`.flink.modify`).
"""

from __future__ import annotations

from typing import Protocol

from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.formats import load
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import check_max_parallelism
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.savepoint import check_output
from statectl.statefmt.vocabulary import Format

from .commit import Staged, commit_staged
from .definitions import KeyedData, OperatorData
from .errors import SpecError
from .job import WriteSession
from .operators import OperatorPlan
from .own_write import OwnWrite
from .report import OperatorReport, WriteReport
from .tasks import OperatorOutput


class Rebuild(Protocol):
    """A named kind of write that rewrites some files of one base operator (e.g. a rescale)."""

    action: str  # what the report calls it
    operator: Operator  # the base operator

    def plan(self, copy: Operator, output: OperatorOutput) -> OperatorPlan:
        """The jobs writing the files that replace some of *copy*'s (its shallow copy)."""


class WriteKind(Protocol):
    """One kind of write: its part in each step of the transaction of `SavepointWriter.write`."""

    removed: list[str]  # the labels of the base's operators the output leaves out

    def plan(self, session: WriteSession) -> None:
        """Check what is to be written and plan its jobs; no file is written yet."""

    def run(self, session: WriteSession) -> None:
        """Run the jobs: every new file in place."""

    def copy(self, out: Location, token: str) -> tuple[int, int]:
        """Copy the files shared with other savepoints into *out*; the files and bytes copied."""

    def staged(self) -> Staged:
        """The savepoint to commit."""

    def reports(self, sp: Savepoint) -> list[OperatorReport]:
        """A report per operator of the committed savepoint *sp*."""


def is_flink(base: Savepoint | None) -> bool:
    return base is not None and any(op.format == Format.FLINK for op in base.operators)


def check_writable_base(base: Savepoint) -> None:
    """Refuse a Flink base for writes that rebuild its operators in statectl's own format."""
    if is_flink(base):
        raise UsageError(f"{base.location} is a Flink savepoint: its operators are rebuilt by the Flink "
                         "writer (rescale, or bootstrap --base --format flink), not in statectl's own format")


def check_base_format(base: Savepoint | None, format: str, new_ids, removed_or_renamed: bool = False) -> None:
    """A derived savepoint points at its base's files, so both must be of one format family; the
    other family is fine when every operator of the base (operator ids *new_ids*) is in the spec
    (nothing to point at)."""
    if base is None or is_flink(base) == (format == Format.FLINK):
        return
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
        # what to write, read by the plan kinds (own_write.py, flink/write.py)
        self.new: dict[str, OperatorData] = {}
        self.removed_ids: list[str] = []  # operator ids
        self.renamed: dict[str, str] = {}  # operator id -> new uid
        self.rebuilt: dict[str, Rebuild] = {}  # operator id -> its rebuild
        self._checked: dict = {}  # what check() found fine: "family" and "output"

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
        if operator.resolved_id in self.new:
            raise SpecError(f"operator {operator.label!r} is given twice")
        operator.check()
        if operator.flink is not None and self.format != Format.FLINK:
            raise SpecError(f"operator {operator.label!r}: a flink: type binding needs format flink")
        states = operator.keyed.states if isinstance(operator.keyed, KeyedData) else ()
        with_ttl = [s.name for s in states if getattr(s, "ttl_column", None)]
        if with_ttl and self.format != Format.FLINK:
            raise SpecError(f"operator {operator.label!r}, state {with_ttl[0]!r}: ttl_column is for the TTL "
                            "states of a Flink savepoint (format flink)")
        self._check_named_by_id([operator.ref])
        self.new[operator.resolved_id] = operator
        return self

    def _check_named_by_id(self, refs) -> None:
        """An operator named by its operator id alone is one of a Flink base's, written again
        by the Flink writer: one line for an id the base does not hold."""
        for ref in refs:
            if ref.operator_id is None:
                continue
            if self.format != Format.FLINK or not is_flink(self.base):
                raise SpecError(f"operator id {ref.operator_id}: an operator named by its operator id "
                                "alone is one of a Flink base's, written with --format flink; give it a uid")
            self.base.operator(ref)  # UnknownOperatorError naming the base's operators

    def remove_operator(self, operator: str | OperatorRef) -> "SavepointWriter":
        """Drop an operator of the base (by uid, or by operator id when it has none)."""
        op = self._base_operator(operator)
        if op.operator_id in self.removed_ids:
            raise UsageError(f"operator {op.label} is removed twice")
        self.removed_ids.append(op.operator_id)
        return self

    def rename_operator(self, operator: str | OperatorRef, new_uid: str) -> "SavepointWriter":
        """Give an operator of the base a new uid (and so a new operator id); its files stay."""
        op = self._base_operator(operator)
        if op.operator_id in self.renamed:
            raise UsageError(f"operator {op.label} is renamed twice")
        if not new_uid:
            raise UsageError("a new uid cannot be empty")
        self.renamed[op.operator_id] = new_uid
        return self

    def with_rebuilt(self, rebuild: Rebuild) -> "SavepointWriter":
        """Rewrite some files of a base operator as *rebuild* plans, keeping the rest as
        shallow copies."""
        if self.base is None:
            raise UsageError("rebuilding an operator needs a base savepoint")
        if getattr(rebuild, "format", None) != Format.FLINK:
            check_writable_base(self.base)
        self.rebuilt[rebuild.operator.operator_id] = rebuild
        return self

    def _base_operator(self, operator: str | OperatorRef) -> Operator:
        if self.base is None:
            raise UsageError("removing or renaming operators needs a base savepoint")
        return self.base.operator(operator)

    # --- writing ------------------------------------------------------------------
    def check(self, output: str, overwrite: bool = False, operators=()) -> Location:
        """Check, before any work, that the base's format family fits the written one (with the
        operators still to come, *operators*: their :class:`OperatorRef`) and that *output* can
        take the savepoint. Each check runs once for what it depends on, so ``write`` repeats
        only one whose input changed."""
        self._check_named_by_id(operators)
        family = (frozenset(self.new) | frozenset(r.resolved_id for r in operators),
                  bool(self.removed_ids or self.renamed))
        if not self._modifies_flink(family[0]) and self._checked.get("family") != family:
            check_base_format(self.base, self.format, family[0], family[1])
            self._checked["family"] = family
        if self._checked.get("output", (None,))[0] != (output, overwrite):
            self._checked["output"] = ((output, overwrite), check_output(output, [self.base], overwrite=overwrite))
        return self._checked["output"][1]

    def write(self, output: str, spark=None, self_contained: bool = False,
              on_job=None, overwrite: bool = False) -> WriteReport:
        """Write the savepoint to *output* (a new location); Spark is needed for new operators.

        One transaction for every kind of write: check the output, plan, run the jobs, copy
        shared files (*self_contained*), commit `_metadata`, report. *on_job*, if given, is
        called with a description before each Spark job. *overwrite* replaces a savepoint
        already at *output* (see :func:`~statectl.writers.commit.commit_staged`).
        """
        out = self.check(output, overwrite)
        kind = self._kind()
        session = WriteSession(spark, out, on_job)
        kind.plan(session)
        session.start()
        try:
            kind.run(session)
            copied = kind.copy(out, session.token) if self_contained else (0, 0)
            sp, referenced = commit_staged(kind.staged(), out, overwrite)
        except BaseException:
            session.fail()
            raise
        session.finish(referenced)
        return WriteReport(sp, kind.reports(sp), kind.removed, *copied, removed_leftovers=session.removed_leftovers)

    def _modifies_flink(self, ids=()) -> bool:
        """Whether this write (with the operators *ids* still to come) only removes or renames
        operators of a Flink base (metadata only)."""
        return is_flink(self.base) and not self.new and not ids and not self.rebuilt

    def _kind(self) -> WriteKind:
        """The plan kind of this write: statectl's own format, or the Flink family's."""
        if self._modifies_flink():
            from .flink.modify import FlinkModification
            return FlinkModification(flink_savepoint(self.base), self.removed_ids, self.renamed)
        removed = [self._label(i) for i in self.removed_ids]
        if self.format != Format.FLINK:
            # a Flink base with every operator in the spec is only an input: nothing of it is kept
            return OwnWrite(self, None if is_flink(self.base) else self.base, removed)
        return self._flink_write(removed)

    def _flink_write(self, removed: list[str]):
        """A Flink savepoint: the new and rebuilt operators written by the Flink writer, the
        base's others (a Flink base) shallow pointer copies, or copied with *self_contained*."""
        from .flink.source import on_flink_base
        from .flink.write import FlinkWrite, kept_max_parallelism

        if not is_flink(self.base):  # nothing of it is kept (check_base_format)
            return FlinkWrite(None, [(op, "written") for op in self.new.values()], [], removed,
                              self.max_parallelism)
        if self.renamed:
            raise UsageError("renaming operators of a Flink savepoint while writing others is not "
                             "supported; rename them with statectl modify first")
        fsp = flink_savepoint(self.base)
        written = set(self.new) | set(self.rebuilt)
        kept = [op for op in fsp.metadata.operators if op.operator_id not in written
                and op.operator_id not in self.removed_ids]
        operators = [(on_flink_base(fsp, op), "written") for op in self.new.values()]
        operators += [(r.data(fsp), r.action) for r in self.rebuilt.values()]
        return FlinkWrite(fsp, operators, kept, removed, self.max_parallelism,
                          kept_max_parallelism(fsp, self.rebuilt))

    def _label(self, operator_id: str) -> str:
        return self.base.operator(OperatorRef(operator_id=operator_id)).label


__all__ = ["SavepointWriter", "WriteReport", "OperatorReport"]
