"""Writing statectl's own format (canonical or RocksDB): its family's write kind in
`SavepointWriter.write`. New operators are planned by :mod:`.operators`, rebuilt ones (a
rescale) by :mod:`.rescale`; the base's others stay as shallow copies (or renamed ones)."""

from __future__ import annotations

from statectl.statefmt.errors import UnknownOperatorError, UsageError
from statectl.statefmt.formats import FORMATS
from statectl.statefmt.ids import OperatorRef, operator_id_for_uid
from statectl.statefmt.keygroups import check_parallelism, default_max_parallelism
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.savepoint import merge_lineage, new_savepoint_id, now_iso, prune_lineage, shallow_copy
from statectl.statefmt.seam import Staged
from statectl.statefmt.vocabulary import Format

from ..definitions import OperatorData
from ..job import WriteSession
from ..report import OperatorReport, operator_report
from .copying import make_self_contained
from .operators import OperatorPlan, plan_operator
from .sinks import output_of


class OwnWrite:
    """A savepoint of statectl's own format: *writer*'s operators written, rebuilt or kept.
    *kept_from* is the savepoint whose operators the output keeps (None: nothing is kept)."""

    def __init__(self, writer, kept_from: Savepoint | None, removed: list[str]):
        self.writer = writer
        self.kept_from = kept_from
        self.removed = removed
        self.plans: list[tuple[OperatorPlan, str]] = []
        self.rebuilt_lineage: list = []
        self.derived: list = []
        self.savepoint: Savepoint | None = None
        self.operator_reports: list[OperatorReport] = []

    def plan(self, session: WriteSession) -> None:
        w = self.writer
        self.derived = self._derive()  # metadata-only part: checked before any file is written
        if w.new and session.spark is None:
            raise UsageError("writing operators from data needs a Spark session")
        if w.rebuilt and session.spark is None:
            raise UsageError("rebuilding operators needs a Spark session")
        self.plans = [(self._plan(op, session), "written") for op in w.new.values()]
        if w.rebuilt:
            from statectl.readers import open_savepoint

            from .rescale import plan_rescaled

            reader = open_savepoint(session.spark, w.base)  # one reader of the loaded base for all
            for op_id, rebuild in w.rebuilt.items():
                copy, needed = shallow_copy(w.base, w.base.operator(OperatorRef(operator_id=op_id)))
                self.rebuilt_lineage.append(needed)
                self.plans.append((plan_rescaled(reader, rebuild, copy, output_of(session, op_id)), rebuild.action))

    def run(self, session: WriteSession) -> None:
        written = [(p.run(session), action) for p, action in self.plans]
        self.savepoint, self.operator_reports = self._assemble(written)

    def copy(self, out, token: str) -> tuple[int, int]:
        self.savepoint, files, size = make_self_contained(self.savepoint, out, token)
        return files, size

    def staged(self) -> Staged:
        return Staged(FORMATS[Format.CANONICAL], self.savepoint)  # one document for both formats

    def reports(self, sp: Savepoint) -> list[OperatorReport]:
        return self.operator_reports

    def _derive(self) -> list[tuple[str, Operator, str]]:
        """The kept operators: (original id, operator, "shallow copy" | "renamed")."""
        w, base = self.writer, self.kept_from
        if base is None:
            return []
        new_ids = set(w.new) | set(w.rebuilt)  # w.new is keyed by operator id
        kept, seen = [], set(new_ids)
        for op in base.operators:
            original = op.operator_id
            if original in w.removed_ids or original in new_ids:
                continue
            if original in w.renamed:
                uid = w.renamed[original]
                op = op.replace(uid=uid, operator_id=operator_id_for_uid(uid))
                kept.append((original, op, "renamed"))
            else:
                kept.append((original, op, "shallow copy"))
        for _, op, _ in kept:
            if op.operator_id in seen:
                raise UsageError(f"two operators of the output would have uid {op.label!r}")
            seen.add(op.operator_id)
        return kept

    def _plan(self, op: OperatorData, session: WriteSession) -> OperatorPlan:
        max_p = op.max_parallelism or self.writer.max_parallelism
        if max_p is None and self.kept_from is not None:
            try:
                max_p = self.kept_from.operator(OperatorRef(uid=op.uid)).max_parallelism
            except UnknownOperatorError:
                pass
        max_p = max_p or default_max_parallelism(op.parallelism)
        check_parallelism(op.parallelism, max_p)
        return plan_operator(op, max_p, self.writer.format, session)

    def _assemble(self, written: list[tuple[Operator, str]]) -> tuple[Savepoint, list]:
        base = self.kept_from
        reports, lineage = [], list(self.rebuilt_lineage)
        slots: dict[str, Operator] = {}  # base operator id -> what takes its place
        for original, op, action in self.derived:
            copy, needed = shallow_copy(base, op)
            lineage.append(needed)
            slots[original] = copy
            reports.append(operator_report(copy, action))
        new = []
        base_ids = {o.operator_id for o in (base.operators if base else ())}
        for op, action in written:
            reports.append(operator_report(op, action))
            if op.operator_id in base_ids:
                slots[op.operator_id] = op
            else:
                new.append(op)
        base_order = [o.operator_id for o in base.operators] if base else []
        operators = [slots[i] for i in base_order if i in slots] + new
        sp = Savepoint(new_savepoint_id(), now_iso(), tuple(operators), merge_lineage(*lineage))
        return prune_lineage(sp), reports
