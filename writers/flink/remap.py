"""`remap`: an old Flink savepoint's state under a new job's operator ids, uids and names.

What goes where is `statefmt.flink.upgrade`'s check: each operator of OLD that holds state is
restored (same id) or matched to one of NEW. The output is `modify`'s metadata-only write
(:class:`~.modify.FlinkModification`): every operator a shallow pointer copy of OLD's, under
the id, uid and name of its NEW operator; OLD's operators without state are left out (nothing
to restore, and their ids may be NEW's). A keyed state convertible by its serializer snapshot
alone gets NEW's snapshot (`retype.py`: its operator's keyed streams written again, the values
byte for byte); one whose values change has them decoded by OLD's serializer and encoded by
NEW's in the same pass (`convert.py`), a partly compatible one (an aggregate added to a SQL
SELECT) with the initial values the user gives for the fields NEW adds. Anything else check
cannot vouch for is refused in one line before a file is written: an operator lost or ambiguous
(unless ``--map`` or ``--drop``), a state incompatible, an operator state or a key whose values
change, values in a snapshot other than an uncompressed canonical one, a keyed operator whose
max parallelism differs.
"""

from __future__ import annotations

import dataclasses
import time

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.compat import CONVERTIBLE, INCOMPATIBLE, PARTLY
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.flink.upgrade import (AMBIGUOUS, LOST, MATCHED, RESTORED, OperatorCheck, UpgradeCheck,
                                             check_described, described, operator_id_of, resolve_choices)
from statectl.statefmt.formats import commit_staged, load
from statectl.statefmt.outputs import check_output
from statectl.statefmt.vocabulary import KeyedTable

from ..job import WriteSession
from ..report import WriteReport
from .convert import convertible_handle
from .modify import FlinkModification
from .retype import retype_streams, with_streams

OPERATOR_KINDS = ("list", "union", "broadcast")  # operator states: no conversion for them yet


def remap_savepoint(old, output: str, against, map: dict[str, str] | None = None, drop=(),
                    self_contained: bool = False, overwrite: bool = False, initial: dict[str, object] | None = None
                    ) -> WriteReport:
    """Write *old*'s state (a location or loaded savepoint) to *output* for the job that took
    *against*; *map* and *drop* as :func:`statectl.check_upgrade` takes them; *initial*: the values
    of the fields NEW adds to a partly compatible state, ``{"OPERATOR:STATE:FIELD": value}``
    (OLD's operator, as check names state and field; a value of None is null).

        from statectl import remap_savepoint
        report = remap_savepoint("sp-41", "sp-41-for-v2", against="sp-new")
        remap_savepoint("sp-41", "out", "sp-new", initial={"GroupAggregate[4]:accState:f1": 0})
    """
    base = old if not isinstance(old, str) else load(old)
    old_fsp, new_fsp = described(base, "OLD"), described(against, "NEW")
    maps, drops = resolve_choices(old_fsp, new_fsp, map, drop)
    check = check_described(old_fsp, new_fsp, maps, drops)
    starts = resolve_initial(old_fsp, initial)
    refuse_unwritable(check, old_fsp, starts)
    out = check_output(output, [base], overwrite=overwrite)
    kind = FlinkRemap(old_fsp, new_fsp, check, sorted(drops), starts)
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


def resolve_initial(old_fsp, initial: dict[str, object] | None) -> dict[str, dict[str, dict[str, object]]]:
    """*initial* ({"OPERATOR:STATE:FIELD": value}) as {OLD operator id: {state: {field: value}}}."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    for name, value in (initial or {}).items():
        parts = str(name).rsplit(":", 2)
        if len(parts) != 3 or not all(parts):
            raise UsageError(f"--initial {name}: name it OPERATOR:STATE:FIELD (as check names them), "
                             "e.g. 'GroupAggregate[4]:accState:f1=0'")
        op = operator_id_of(old_fsp, parts[0], "OLD")
        out.setdefault(op, {}).setdefault(parts[1], {})[parts[2]] = value
    return out


def refuse_unwritable(check: UpgradeCheck, old_fsp, starts: dict) -> None:
    """One line for the first reason *check* gives that remap cannot write: an operator with no
    place in NEW, a state incompatible, or one whose conversion remap does not do (yet)."""
    unplaced = [op for op in check.operators if op.status in (LOST, AMBIGUOUS)]
    if unplaced:
        shown = ", ".join(f"{op.old} ({op.status}" + (f": {', '.join(op.candidates)})" if op.candidates else ")")
                          for op in unplaced)
        raise UsageError(f"{len(unplaced)} operator(s) of OLD have no place in NEW: {shown}; say where with "
                         "--map OLD=NEW or leave them out with --drop OLD (see statectl check)")
    infos = {op.operator_id: op for op in old_fsp.operators}
    for op in check.operators:
        given = starts.get(op.old_id, {})
        for s in op.states:
            why = _refused(s, given.get(s.name, {}))
            if why:
                because = "" if s.level == PARTLY else f" ({'; '.join(s.reasons)})"
                raise UsageError(f"operator {op.old} -> {op.new}: state {s.name} {why}{because}")
            if s.values and s.level in (CONVERTIBLE, PARTLY):
                _convertible_streams(infos[op.old_id], f"operator {op.old}, state {s.name}")
        unused = {f"{state}:{path}" for state, paths in given.items() for path in paths} - \
            {f"{s.name}:{path}" for s in op.states if s.level == PARTLY for path in s.added}
        if unused:
            raise UsageError(f"--initial {op.old}:{sorted(unused)[0]}: not a field NEW adds to a partly compatible "
                             "state (see statectl check)")
        if op.max_parallelism and any(s.kind and s.kind not in OPERATOR_KINDS for s in op.states):
            raise UsageError(f"operator {op.old} -> {op.new}: max parallelism {op.max_parallelism[0]} in OLD, "
                             f"{op.max_parallelism[1]} in NEW: rescale OLD to it first (statectl rescale)")


def _refused(s, given: dict) -> str | None:
    """Why remap cannot write the state *s* (None: it can); *given*: its --initial values."""
    if s.level == INCOMPATIBLE:
        return "is incompatible"
    if s.level not in (CONVERTIBLE, PARTLY) or not s.values:
        return None
    if s.kind in OPERATOR_KINDS:
        return "is an operator state whose values need converting, which remap does not do yet"
    if s.kind in ("key", KeyedTable.TIMERS) or s.key_bytes:
        return "has keys whose bytes change (their key groups and order would), which remap does not convert yet"
    missing = [path for path in s.added if path not in given] if s.level == PARTLY else []
    if missing:
        return (f"is partly compatible (an aggregate added): give the initial value of {', '.join(missing)} with "
                f"--initial OPERATOR:{s.name}:{missing[0]}=VALUE (COUNT 0; SUM, MIN, MAX null)")
    return None


def _convertible_streams(info, where: str) -> None:
    """One line when *info*'s keyed streams are not ones whose values remap rewrites."""
    if info.keyed_header is not None and info.keyed_header.compressed:
        raise UsageError(f"{where}: its values need converting, which remap does not do for compressed snapshots "
                         "yet (take the old job's savepoint without snapshot compression)")
    for split in info.keyed_splits:
        convertible_handle(split.handle, where)


def rewritten_states(op: OperatorCheck) -> tuple[set[str], set[str], bool]:
    """The keyed states of *op* whose serializer snapshots become NEW's (values kept), those whose
    values are rewritten too, and whether the key's snapshot becomes NEW's."""
    converted = [s for s in op.states if s.level in (CONVERTIBLE, PARTLY) and s.kind != "key"]
    return ({s.name for s in converted if not s.values}, {s.name for s in converted if s.values},
            any(s.kind == "key" and s.level == CONVERTIBLE for s in op.states))


class FlinkRemap(FlinkModification):
    """OLD's `_metadata` with its stateful operators under their NEW ids, uids and names; the
    keyed streams of those with states convertible by their serializer snapshot alone written
    again with NEW's snapshots (`retype.py`), every other file a pointer copy."""

    def __init__(self, old_fsp, new_fsp, check: UpgradeCheck, dropped: list[str], starts: dict | None = None):
        super().__init__(old_fsp, dropped, {})
        self.new_fsp, self.check, self.starts = new_fsp, check, starts or {}
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
            kept, converted, key = rewritten_states(chosen)
            if converted:
                action += f", values of {', '.join(sorted(converted))} converted to NEW's serializers"
            elif kept or key:
                action += ", serializer snapshots from NEW"
            self.actions[chosen.new_id] = action

    def run(self, session: WriteSession) -> None:
        super().run(session)
        new_infos = {op.operator_id: op for op in self.new_fsp.operators}
        kept = {op.operator_id: op for op in self.kept.operators}
        now_ms = int(time.time() * 1000)  # the TTL timestamp of values TTL is switched on for
        for chosen in self.check.operators:
            states, converted, key = rewritten_states(chosen)
            if not states and not converted and not key:
                continue
            header = new_infos[chosen.new_id].keyed_header
            if header is None:
                raise UsageError(f"NEW operator {chosen.new} has no keyed state header to take the snapshots from")
            targets = {m.name: m for m in header.states if m.name in converted}
            moves = retype_streams(self.fsp.location, kept[chosen.new_id], header, states, key, session.out,
                                   session.token, targets, self.starts.get(chosen.old_id, {}), now_ms)
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
