"""Writing a canonical Apache Flink savepoint (``bootstrap --format flink``, ``rescale``): the
Flink plan kind of `SavepointWriter.write`. Operators are written from data as :mod:`.plan`
plans them; the base's others are kept (:mod:`.keep`); `_metadata` comes last
(`statefmt.formats.commit_staged`); a failed write removes every file it began, as for
statectl's own formats."""

from __future__ import annotations

import dataclasses
import time

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.format import FlinkCommit
from statectl.statefmt.flink.handles import InlineStream, keyed_streams
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.formats import FORMATS
from statectl.statefmt.flink.savepoint_write import OLDEST_WRITTEN_VERSION, metadata_bytes
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.keygroups import default_max_parallelism
from statectl.statefmt.model import Savepoint
from statectl.statefmt.seam import Staged
from statectl.statefmt.vocabulary import Format

from ..definitions import OperatorData
from ..job import WriteSession
from ..report import OperatorReport, operator_report
from .binding import FlinkBinding
from .keep import KeptOperators
from .plan import FlinkOperatorPlan


class FlinkWrite:
    """A Flink savepoint: *operators* ((data, action) pairs: new, replacing the base's operator
    with their operator id (their uid's, or the id they are named by), or rebuilt) written from data, the operators *kept* of the base *fsp* (if
    any) shallow pointer copies; *layout* forces the written operators' keyed layout. *kept_max_parallelism* is recorded for the kept operators
    without keyed state (their state has no key groups) that can run at it."""

    def __init__(self, fsp, operators: list[tuple[OperatorData, str]], kept: list[FlinkOperator],
                 removed: list[str], max_parallelism: int | None = None, kept_max_parallelism: int | None = None,
                 layout: str | None = None):
        self.fsp = fsp
        self.operators = operators
        self.source = kept
        self.removed = removed
        self.max_parallelism = max_parallelism
        self.kept_max_parallelism = kept_max_parallelism
        self.layout = layout  # "native" or "canonical" for every written operator; None: each its base's
        self.plans: list[tuple[FlinkOperatorPlan, str]] = []
        self.kept: KeptOperators | None = None
        self.written: list[tuple[FlinkOperator, OperatorReport]] = []

    def plan(self, session: WriteSession) -> None:
        if self.operators and session.spark is None:
            raise UsageError("writing operators from data needs a Spark session")
        now_ms = int(time.time() * 1000)
        for data, action in self.operators:
            data = laid_out(data, self.layout)
            max_p = data.max_parallelism or self.max_parallelism or default_max_parallelism(data.parallelism)
            self.plans.append((FlinkOperatorPlan(data, max_p, session, now_ms), action))

    def run(self, session: WriteSession) -> None:
        self.kept = KeptOperators(self.fsp, self.source) if self.fsp is not None else None
        self.written = [plan.run(action) for plan, action in self.plans]

    def copy(self, out, token: str) -> tuple[int, int]:
        return self.kept.copy(out, token) if self.kept is not None else (0, 0)

    def _operators(self, kept: list[FlinkOperator]) -> list[FlinkOperator]:
        """The operators of `_metadata`: in the base's order (a written one with the name of the
        base's operator it replaces), the new ones after them."""
        base = {op.operator_id: op for op in self.fsp.metadata.operators} if self.fsp is not None else {}
        written = {op.operator_id: self._replacing(op, base[op.operator_id]) if op.operator_id in base
                   else op for op, _ in self.written}
        by_id = {**{op.operator_id: op for op in kept}, **written}
        return [by_id[i] for i in base if i in by_id] + [op for i, op in written.items() if i not in base]

    def _replacing(self, op: FlinkOperator, base: FlinkOperator) -> FlinkOperator:
        """A written operator replacing *base*: with its name, and its coordinator state (a
        source's split enumerator checkpoint, which no spec writes) kept, inline."""
        coordinator = base.coordinator
        if coordinator is not None and not isinstance(coordinator, InlineStream):
            coordinator = InlineStream(f"coordinator-{op.operator_id}", read_stream(self.fsp.location, coordinator))
        return dataclasses.replace(op, name=base.name, coordinator=coordinator)

    def metadata(self, operators: list[FlinkOperator]) -> bytes:
        """`_metadata` in the base's version (a Flink 1.x base's 4: the release that wrote it
        restores it), else in Flink 2.x's."""
        if self.fsp is None:
            return metadata_bytes(operators)
        return metadata_bytes(operators, max(self.fsp.metadata.version, OLDEST_WRITTEN_VERSION))

    def staged(self) -> Staged:
        kept = [_retagged(op, self.kept_max_parallelism) for op in (self.kept.operators if self.kept else ())]
        files = {f for op, _ in self.written for f in _files_of(op)} | (self.kept.files if self.kept else set())
        document = FlinkCommit(self.metadata(self._operators(kept)), tuple(self.kept.lineage if self.kept else ()),
                               frozenset(files))
        return Staged(FORMATS[Format.FLINK], document)

    def reports(self, sp: Savepoint) -> list[OperatorReport]:
        written = {r.operator_id: r for _, r in self.written}
        return [written.get(op.operator_id) or operator_report(op, "shallow copy") for op in sp.operators]


def laid_out(data: OperatorData, layout: str | None) -> OperatorData:
    """*data* with its keyed state written in *layout* (None: as its binding says, its base's)."""
    if layout is None:
        return data
    return dataclasses.replace(data, flink=dataclasses.replace(data.flink or FlinkBinding(), native=layout == "native"))


def kept_max_parallelism(fsp, rebuilt: dict) -> int | None:
    """The max parallelism of the rebuilt (rescaled) operators, when every keyed operator of
    *fsp* is among them and they share one: Flink checks every stateful operator's max
    parallelism against the job's."""
    keyed = {op.operator_id for op in fsp.operators if op.keyed_header is not None}
    retag = {r.max_parallelism for r in rebuilt.values()} if keyed <= set(rebuilt) else set()
    return retag.pop() if len(retag) == 1 else None


def _retagged(op: FlinkOperator, max_parallelism: int | None) -> FlinkOperator:
    """*op* with *max_parallelism* when it holds no keyed state and can run at it."""
    if max_parallelism is None or op.parallelism > max_parallelism or \
            any(s.managed_keyed is not None or s.raw_keyed is not None for s in op.subtasks):
        return op
    return dataclasses.replace(op, max_parallelism=max_parallelism)


def _files_of(op: FlinkOperator) -> list[str]:
    names = []
    for s in op.subtasks:
        if s.managed_keyed is not None:
            names += [stream.relative_path for stream in keyed_streams(s.managed_keyed)]
        names += [h.stream.relative_path for h in s.managed_operator]
    return names
