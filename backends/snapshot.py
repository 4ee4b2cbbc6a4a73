"""Subtask snapshots, and the one commit that turns all of them into a savepoint."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.errors import UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.model import KeyedSection, LineageEntry, Operator, OperatorState, Savepoint
from statectl.statefmt.formats import commit
from statectl.statefmt.savepoint import merge_lineage, new_savepoint_id, now_iso


@dataclass(frozen=True)
class SubtaskSnapshot:
    """What one subtask wrote: its files, described but not yet committed."""

    operator_id: str
    uid: str | None
    subtask: int
    parallelism: int
    max_parallelism: int
    keyed: KeyedSection | None
    operator_states: tuple[OperatorState, ...]
    format: str
    lineage: tuple[LineageEntry, ...] = ()


def commit_snapshots(out: "str | Location", snapshots, savepoint_id: str | None = None
                     ) -> Savepoint:
    """Commit every subtask's snapshot of every operator as one savepoint at *out*.

    Each operator needs exactly one snapshot per subtask, all at the same
    parallelism and with the same state declarations. `_metadata` is written
    last and atomically, so a crash before the end leaves no savepoint.
    """
    by_op: dict[str, list[SubtaskSnapshot]] = {}
    for s in snapshots:
        by_op.setdefault(s.operator_id, []).append(s)
    if not by_op:
        raise UsageError("nothing to commit: no subtask snapshots")
    operators = [_merge(sorted(group, key=lambda s: s.subtask)) for group in by_op.values()]
    lineage = merge_lineage(*(s.lineage for s in snapshots))
    sp = Savepoint(savepoint_id or new_savepoint_id(), now_iso(), tuple(operators), lineage)
    return commit(sp, out)


def _merge(group: list[SubtaskSnapshot]) -> Operator:
    first = group[0]
    label = first.uid or first.operator_id
    p = first.parallelism
    if [s.subtask for s in group] != list(range(p)) or any(s.parallelism != p for s in group):
        raise UsageError(
            f"operator {label}: need one snapshot from each of subtasks 0..{p - 1}, got "
            f"subtasks {[s.subtask for s in group]} at parallelism(s) "
            f"{sorted({s.parallelism for s in group})}"
        )
    if any((s.max_parallelism, s.format) != (first.max_parallelism, first.format) for s in group):
        raise UsageError(f"operator {label}: subtasks disagree on max parallelism or format")
    keyed = None
    if first.keyed is not None:
        shape = _shape(first.keyed)
        if any(s.keyed is None or _shape(s.keyed) != shape for s in group):
            raise UsageError(f"operator {label}: subtasks declared different keys or keyed states; "
                             "declare every state in every subtask")
        keyed = KeyedSection(first.keyed.key, first.keyed.states,
                             tuple(f for s in group for f in s.keyed.files),
                             tuple(f for s in group for f in s.keyed.timers),
                             first.keyed.namespace_type)
    elif any(s.keyed is not None for s in group):
        raise UsageError(f"operator {label}: only some subtasks have keyed state")
    names = [st.name for st in first.operator_states]
    states = []
    for i, name in enumerate(names):
        parts = [s.operator_states[i] if i < len(s.operator_states) else None for s in group]
        if any(pt is None or (pt.name, pt.kind, pt.value_type, pt.key_type) !=
               (name, first.operator_states[i].kind, first.operator_states[i].value_type,
                first.operator_states[i].key_type) for pt in parts):
            raise UsageError(f"operator {label}: subtasks declared different operator states")
        d = parts[0]
        states.append(OperatorState(d.name, d.kind, d.value_type,
                                    tuple(f for pt in parts for f in pt.files), d.key_type))
    if any(len(s.operator_states) != len(names) for s in group):
        raise UsageError(f"operator {label}: subtasks declared different operator states")
    return Operator(first.operator_id, first.uid, p, first.max_parallelism, keyed, tuple(states),
                    first.format)


def _shape(k: KeyedSection):
    return (k.key, tuple((s.name, s.kind, s.value_type, s.user_key_type) for s in k.states),
            k.namespace_type)
