"""SavepointWriter: a new savepoint, or one derived from an existing savepoint.

Like Flink's ``SavepointWriter``: start from nothing (``new``) or from a base
(``from_existing``), add or replace operators with data, remove operators,
change uids, then ``write``. Operators of the base left untouched become
shallow copies that reference the base's files; ``self_contained`` copies
those files instead. Data files are written by Spark tasks; the driver gets
only their handles and writes `_metadata` last. If anything fails, every file
this write created is removed and the output holds no savepoint.

``write`` is one transaction for every kind of write; the format family of the written
format (the base's unless told otherwise) gives its write kind (`writers.kinds`): statectl's
own format (:mod:`.own.write`), a Flink savepoint written from data or rescaled
(:mod:`.flink.write`), a Flink savepoint's operators removed or renamed (:mod:`.flink.modify`).
"""

from __future__ import annotations

from statectl.statefmt.errors import UsageError
from statectl.statefmt.formats import commit_staged, load
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.keygroups import check_max_parallelism
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.outputs import check_output
from statectl.statefmt.vocabulary import Format

from .definitions import OperatorData
from .errors import SpecError
from .job import WriteSession
from .kinds import WriteFamily, family_for_format, family_of_savepoint
from .rebuild import Rebuild
from .report import OperatorReport, WriteReport


LAYOUTS = ("native", "canonical")


class SavepointWriter:
    """Build a savepoint from DataFrames, optionally on top of an existing one.

    *format* is the physical format written (canonical, rocksdb or flink); by default the
    base's family's (flink for a Flink base), else canonical. *layout* (``native`` or
    ``canonical``, a Flink output only) is how every written operator's keyed state is laid
    out; by default its base operator's (a native RocksDB or ForSt snapshot stays native),
    else canonical.
    """

    def __init__(self, base: Savepoint | None = None, max_parallelism: int | None = None,
                 format: str | None = None, layout: str | None = None):
        if format is not None and format not in Format.own():
            *first, last = Format.own()
            raise UsageError(f"unknown physical format {format!r}; use {', '.join(first)} or {last}")
        if max_parallelism is not None:
            check_max_parallelism(max_parallelism)
        self.base = base
        self.base_family: WriteFamily | None = family_of_savepoint(base) if base is not None else None
        self.format = format or (self.base_family.default_format if base is not None else Format.CANONICAL.value)
        self.family: WriteFamily = family_for_format(self.format)
        self.max_parallelism = max_parallelism
        if layout is not None and layout not in self.family.keyed_layouts:
            raise UsageError(f"--{layout} chooses the layout of a Flink savepoint's keyed state; this write's "
                             f"output is {self.family.output_name(self.format)}" if layout in LAYOUTS else
                             f"unknown keyed layout {layout!r}; use {' or '.join(LAYOUTS)}")
        self.layout = layout
        # what to write, read by the family's write kind (own/write.py, flink/write.py)
        self.new: dict[str, OperatorData] = {}
        self.removed_ids: list[str] = []  # operator ids
        self.renamed: dict[str, str] = {}  # operator id -> new uid
        self.rebuilt: dict[str, Rebuild] = {}  # operator id -> its rebuild
        self._checked: dict = {}  # what check() found fine: "family" and "output"

    @classmethod
    def new(cls, max_parallelism: int | None = None, format: str | None = None,
            layout: str | None = None) -> "SavepointWriter":
        """An empty savepoint; *max_parallelism* is the default of its operators."""
        return cls(None, max_parallelism, format, layout)

    @classmethod
    def from_existing(cls, location: str, max_parallelism: int | None = None,
                      format: str | None = None, layout: str | None = None) -> "SavepointWriter":
        """A savepoint derived from the one at *location*, which is only ever read."""
        return cls(load(location), max_parallelism, format, layout)

    @classmethod
    def rebuilding(cls, base: Savepoint, rebuilds, layout: str | None = None) -> "SavepointWriter":
        """*base* (its own format family) with each of *rebuilds* written again (a rescale's, a
        prune's; checked first), every other operator a shallow copy."""
        writer = cls(base, layout=layout)
        writer.base_family.check_rebuilds(base, rebuilds)
        for rebuild in rebuilds:
            writer.with_rebuilt(rebuild)
        return writer

    # --- building -----------------------------------------------------------------
    def with_operator(self, operator: OperatorData) -> "SavepointWriter":
        """Add *operator*, or replace the base's operator with the same uid."""
        if operator.resolved_id in self.new:
            raise SpecError(f"operator {operator.label!r} is given twice")
        operator.check()
        self.family.check_operator(operator)
        self._check_named_by_id([operator.ref])
        self.new[operator.resolved_id] = operator
        return self

    def _check_named_by_id(self, refs) -> None:
        """An operator named by its operator id alone is one of a base's whose family names
        operators so (Flink's), written again in that family: one line for an id the base does
        not hold."""
        for ref in refs:
            if ref.operator_id is None:
                continue
            if not self.family.names_by_operator_id or self.base_family is not self.family:
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
        """Write a base operator again as *rebuild* says (a rescale), keeping the files it does
        not rewrite as shallow copies. The base's own family rebuilds it."""
        if self.base is None:
            raise UsageError("rebuilding an operator needs a base savepoint")
        if self.base_family is not self.family:
            raise UsageError(f"{self.base.location} is {self.base_family.title}: its operators are rebuilt "
                             f"in its own format family, not as {self.family.output_name(self.format)}")
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
        if self._checked.get("family") != family:
            self._check_base_family(*family)
            self._checked["family"] = family
        if self._checked.get("output", (None,))[0] != (output, overwrite):
            self._checked["output"] = ((output, overwrite), check_output(output, [self.base], overwrite=overwrite))
        return self._checked["output"][1]

    def _check_base_family(self, new_ids, removed_or_renamed: bool) -> None:
        """A derived savepoint points at its base's files, so both must be of one format family;
        the other family is fine when every operator of the base (operator ids *new_ids*) is
        written again (nothing to point at)."""
        if self.base is None or self.base_family is self.family:
            return
        kept = [op.label for op in self.base.operators if op.operator_id not in new_ids]
        if kept:
            raise UsageError(
                f"{self.base.location} is {self.base_family.title} and the output would be "
                f"{self.family.output_name(self.format)}: operator(s) {', '.join(kept)} not in the spec cannot "
                f"be shallow copies of it; write --format {self.base_family.default_format}, or give them in the spec")
        if removed_or_renamed:
            raise UsageError("removing or renaming operators needs a base of the written format")

    def write(self, output: str, spark=None, self_contained: bool = False,
              on_job=None, overwrite: bool = False) -> WriteReport:
        """Write the savepoint to *output* (a new location); Spark is needed for new operators.

        One transaction for every kind of write: check the output, plan, run the jobs, copy
        shared files (*self_contained*), commit `_metadata`, report. *on_job*, if given, is
        called with a description before each Spark job. *overwrite* replaces a savepoint
        already at *output*: the files the replaced savepoint owned go once the new `_metadata`
        is in place (`statefmt.formats.commit_staged`).
        """
        out = self.check(output, overwrite)
        kind = self.family.write_kind(self, [self._label(i) for i in self.removed_ids], spark)
        session = WriteSession(spark, out, on_job)
        kind.plan(session)
        session.start()
        try:
            kind.run(session)
            copied = kind.copy(out, session.token) if self_contained else (0, 0)
            sp, referenced = commit_staged(out, kind.staged(), overwrite=overwrite)
        except BaseException:
            session.fail()
            raise
        session.finish(referenced)
        return WriteReport(sp, kind.reports(sp), kind.removed, *copied, removed_leftovers=session.removed_leftovers)

    def _label(self, operator_id: str) -> str:
        return self.base.operator(OperatorRef(operator_id=operator_id)).label


__all__ = ["SavepointWriter", "WriteReport", "OperatorReport"]
