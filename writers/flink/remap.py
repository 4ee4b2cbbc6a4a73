"""`remap`: an old Flink savepoint's state under a new job's operator ids, uids and names.

What goes where is `statefmt.flink.upgrade`'s check: each operator of OLD that holds state is
restored (same id) or matched to one of NEW. The output is `modify`'s metadata-only write
(:class:`~.modify.FlinkModification`): every operator a shallow pointer copy of OLD's, under
the id, uid and name of its NEW operator; OLD's operators without state are left out (nothing
to restore, and their ids may be NEW's). A keyed state convertible by its serializer snapshot
alone gets NEW's snapshot (`retype.py`: its operator's keyed streams written again, the values
byte for byte). Anything else check cannot vouch for is refused in one line before a file is
written: an operator lost or ambiguous (unless ``--map`` or ``--drop``), a state incompatible or
whose values need converting, a keyed operator whose max parallelism differs.
"""

from __future__ import annotations

import dataclasses

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.compat import CONVERTIBLE, INCOMPATIBLE
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.flink.upgrade import (AMBIGUOUS, LOST, MATCHED, RESTORED, OperatorCheck, UpgradeCheck,
                                             check_described, described, resolve_choices)
from statectl.statefmt.formats import commit_staged, load
from statectl.statefmt.outputs import check_output

from ..job import WriteSession
from .retype import retype_streams, with_streams

OPERATOR_KINDS = ("list", "union", "broadcast")  # operator states: no header rewrite for them yet
from ..report import WriteReport
from .modify import FlinkModification


def remap_savepoint(old, output: str, against, map: dict[str, str] | None = None, drop=(),
                    self_contained: bool = False, overwrite: bool = False) -> WriteReport:
    """Write *old*'s state (a location or loaded savepoint) to *output* for the job that took
    *against*; *map* and *drop* as :func:`statectl.check_upgrade` takes them.

        from statectl import remap_savepoint
        report = remap_savepoint("sp-41", "sp-41-for-v2", against="sp-new")
    """
    base = old if not isinstance(old, str) else load(old)
    old_fsp, new_fsp = described(base, "OLD"), described(against, "NEW")
    maps, drops = resolve_choices(old_fsp, new_fsp, map, drop)
    check = check_described(old_fsp, new_fsp, maps, drops)
    refuse_unless_shallow(check)
    out = check_output(output, [base], overwrite=overwrite)
    kind = FlinkRemap(old_fsp, new_fsp, check, sorted(drops))
    session = WriteSession(None, out)
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


def refuse_unless_shallow(check: UpgradeCheck) -> None:
    """One line for the first reason *check* gives that remap cannot write: an operator with no
    place in NEW, a state incompatible, or convertible only by rewriting its values."""
    unplaced = [op for op in check.operators if op.status in (LOST, AMBIGUOUS)]
    if unplaced:
        shown = ", ".join(f"{op.old} ({op.status}" + (f": {', '.join(op.candidates)})" if op.candidates else ")")
                          for op in unplaced)
        raise UsageError(f"{len(unplaced)} operator(s) of OLD have no place in NEW: {shown}; say where with "
                         "--map OLD=NEW or leave them out with --drop OLD (see statectl check)")
    for op in check.operators:
        for s in op.states:
            if s.level == INCOMPATIBLE or (s.level == CONVERTIBLE and (s.values or s.kind in OPERATOR_KINDS)):
                what = "is incompatible" if s.level == INCOMPATIBLE else \
                    "needs its values converted, which remap does not do yet"
                raise UsageError(f"operator {op.old} -> {op.new}: state {s.name} {what} ({'; '.join(s.reasons)})")
        if op.max_parallelism and any(s.kind and s.kind not in OPERATOR_KINDS for s in op.states):
            raise UsageError(f"operator {op.old} -> {op.new}: max parallelism {op.max_parallelism[0]} in OLD, "
                             f"{op.max_parallelism[1]} in NEW: rescale OLD to it first (statectl rescale)")


def retyped_states(op: OperatorCheck) -> tuple[set[str], bool]:
    """The keyed states of *op* whose serializer snapshots become NEW's, and whether the key's does."""
    states = {s.name for s in op.states if s.level == CONVERTIBLE and s.kind != "key"}
    return states, any(s.kind == "key" and s.level == CONVERTIBLE for s in op.states)


class FlinkRemap(FlinkModification):
    """OLD's `_metadata` with its stateful operators under their NEW ids, uids and names; the
    keyed streams of those with states convertible by their serializer snapshot alone written
    again with NEW's snapshots (`retype.py`), every other file a pointer copy."""

    def __init__(self, old_fsp, new_fsp, check: UpgradeCheck, dropped: list[str]):
        super().__init__(old_fsp, dropped, {})
        self.new_fsp, self.check = new_fsp, check
        self.retyped: dict[str, dict] = {}  # NEW id -> its subtasks' new keyed streams (retype_streams)
        self.retyped_files: set[str] = set()

    def plan(self, session: WriteSession) -> None:
        new_ops = {op.operator_id: op for op in self.new_fsp.metadata.operators}
        targets = {op.old_id: op for op in self.check.operators if op.status in (RESTORED, MATCHED)}
        self.source, self.actions = [], {}
        for op in self.fsp.metadata.operators:
            chosen = targets.get(op.operator_id)
            if chosen is None:
                continue  # dropped, or without state
            self.source.append(_as_new(op, new_ops[chosen.new_id], self.fsp.metadata.version))
            action = "shallow copy" if chosen.status == RESTORED else f"remapped from {chosen.old} ({chosen.how})"
            if any(retyped_states(chosen)):
                action += ", serializer snapshots from NEW"
            self.actions[chosen.new_id] = action

    def run(self, session: WriteSession) -> None:
        super().run(session)
        new_infos = {op.operator_id: op for op in self.new_fsp.operators}
        kept = {op.operator_id: op for op in self.kept.operators}
        for chosen in self.check.operators:
            states, key = retyped_states(chosen)
            if not states and not key:
                continue
            header = new_infos[chosen.new_id].keyed_header
            if header is None:
                raise UsageError(f"NEW operator {chosen.new} has no keyed state header to take the snapshots from")
            moves = retype_streams(self.fsp.location, kept[chosen.new_id], header.raw, states, key,
                                   session.out, session.token)
            self.retyped[chosen.new_id] = moves
            self.retyped_files |= {stream.relative_path for stream, _ in moves.values()}

    def staged(self):
        """After `copy` (self-contained) too: the kept operators as they are then, with the new streams."""
        self.kept.operators = [with_streams(op, self.retyped[op.operator_id]) if op.operator_id in self.retyped
                               else op for op in self.kept.operators]
        self.kept.files |= self.retyped_files
        return super().staged()


def _as_new(op: FlinkOperator, new: FlinkOperator, version: int) -> FlinkOperator:
    """*op*'s state under *new*'s operator id (and uid and name, which `_metadata` v5+ holds);
    an operator without keyed state takes NEW's max parallelism (it has no key groups)."""
    keyed = any(s.managed_keyed is not None or s.raw_keyed is not None for s in op.subtasks)
    return dataclasses.replace(
        op, operator_id=new.operator_id, uid=new.uid if version >= 5 else None,
        name=new.name if version >= 5 else None,
        max_parallelism=op.max_parallelism if keyed or op.parallelism > new.max_parallelism else new.max_parallelism)
