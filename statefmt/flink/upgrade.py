"""`check_upgrade`: will a new job restore an old savepoint? Operators matched, states compared.

The new job is described by a snapshot of its own (``NEW``): its operator ids, uids, names
(SQL node kinds such as ``GroupAggregate[7]``) and the serializer snapshot of every state it
registers. Each operator of ``OLD`` that holds state is *restored* (NEW has its operator id),
*matched* to an operator of NEW by the first of :data:`TIERS` that pairs it with exactly one,
*ambiguous* (several would do) or *lost*. Each state of a restored or matched operator gets a
:mod:`.compat` verdict. Only `_metadata` and the streams' headers are read, never state data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnknownOperatorError, UsageError
from ..model import KEYED_PART
from .compat import CONVERTIBLE, FLINK_MIGRATES, IDENTICAL, INCOMPATIBLE, LEVELS, PARTLY, compare
from .describe import FlinkOperatorInfo, FlinkSavepoint
from .matching import label, match, stateful_ids, states_of

RESTORED, MATCHED, AMBIGUOUS, LOST, DROPPED = "restored", "matched", "ambiguous", "lost", "dropped"
# States holding a SQL aggregate's accumulators (GroupAggFunction's and its mini-batch twin's): a
# field NEW adds to their row is an aggregate added to the SELECT, which starts from its initial value.
ACCUMULATOR_STATES = ("accState",)
STARTS_EMPTY, NOT_REGISTERED, UNKNOWN = "starts empty", "not registered by NEW", "unknown"


@dataclass(frozen=True)
class StateCheck:
    """One state of a matched operator: *level* one of `compat.LEVELS`, STARTS_EMPTY (only NEW
    registers it), NOT_REGISTERED (only OLD has it: kept, unused) or UNKNOWN (unreadable)."""
    name: str
    kind: str
    level: str
    reasons: tuple[str, ...] = ()
    values: bool = False  # convertible: the values must be rewritten, not only the serializer snapshot
    added: tuple[str, ...] = ()  # the fields NEW adds (partly compatible: they need initial values)
    key_bytes: bool = False  # its namespace's or map keys' bytes change too (their order may)


@dataclass(frozen=True)
class OperatorCheck:
    old: str  # OLD's label (uid, name or operator id)
    old_id: str
    status: str  # RESTORED, MATCHED, AMBIGUOUS, LOST or DROPPED (--drop)
    new: str | None = None
    new_id: str | None = None
    how: str = ""  # why matched: "same operator id", "uid", "name", ... or "--map"
    states: tuple[StateCheck, ...] = ()
    notes: tuple[str, ...] = ()  # parallelism or max parallelism changes
    candidates: tuple[str, ...] = ()  # AMBIGUOUS: NEW's operators that would do
    max_parallelism: tuple[int, int] | None = None  # (OLD's, NEW's) when they differ

    @property
    def level(self) -> str:
        """The worst of its states' compat levels (UNKNOWN counted as incompatible)."""
        levels = [s.level for s in self.states if s.level in LEVELS]
        worst = max(levels, key=LEVELS.index, default=IDENTICAL)
        return INCOMPATIBLE if any(s.level == UNKNOWN for s in self.states) else worst

    @property
    def unchanged(self) -> bool:
        """Restored by NEW as it is: same id, states identical or migrated by Flink itself."""
        return self.status == RESTORED and self.level in (IDENTICAL, FLINK_MIGRATES) and not self.max_parallelism


@dataclass(frozen=True)
class UpgradeCheck:
    old: str
    new: str
    operators: tuple[OperatorCheck, ...]  # OLD's operators that hold state
    starting_empty: tuple[str, ...]  # NEW's operators with state that nothing of OLD restores
    stateless: int = 0  # OLD's operators without state (nothing to restore)

    @property
    def restores_unchanged(self) -> bool:
        return all(op.unchanged for op in self.operators)

    def to_json(self) -> dict:
        return {"old": self.old, "new": self.new, "restores_unchanged": self.restores_unchanged,
                "operators": [_operator_json(op) for op in self.operators],
                "starting_empty": list(self.starting_empty), "stateless_operators": self.stateless}


def _operator_json(op: OperatorCheck) -> dict:
    doc = {"old": op.old, "old_operator_id": op.old_id, "status": op.status, "new": op.new,
           "new_operator_id": op.new_id, "how": op.how, "level": op.level if op.status in (RESTORED, MATCHED) else None,
           "states": [_state_json(s) for s in op.states], "notes": list(op.notes)}
    if op.candidates:
        doc["candidates"] = list(op.candidates)
    return doc




def _state_json(s: StateCheck) -> dict:
    doc = {"name": s.name, "kind": s.kind, "level": s.level, "reasons": list(s.reasons)}
    if s.level in (CONVERTIBLE, PARTLY):
        doc["rewrites"] = "values" if s.values else "serializer snapshot"
    if s.added:
        doc["added"] = list(s.added)
    return doc


def check_upgrade(old, new, map: dict[str, str] | None = None, drop=()) -> UpgradeCheck:
    """Will the job that took the snapshot *new* restore the savepoint *old*? (Each a location or
    a loaded savepoint.) *map* ({OLD operator: NEW operator}) and *drop* (OLD operators) say what
    to do with operators the matching cannot pair; operators are named by uid, operator id or name.

        from statectl import check_upgrade
        c = check_upgrade("sp-41", "sp-new")
        c.restores_unchanged, [(op.old, op.status, op.new, op.how) for op in c.operators]
    """
    old_fsp, new_fsp = described(old, "OLD"), described(new, "NEW")
    maps, drops = resolve_choices(old_fsp, new_fsp, map, drop)
    return check_described(old_fsp, new_fsp, maps, drops)


def described(savepoint, role: str) -> FlinkSavepoint:
    """The Flink description of *savepoint* (a location or a loaded savepoint); one line for
    anything else."""
    from ..fs import Location
    from ..model import Savepoint
    from .savepoint import is_flink_savepoint, open_flink_savepoint
    from .streamio import METADATA

    if isinstance(savepoint, FlinkSavepoint):
        return savepoint
    if isinstance(savepoint, Savepoint):
        if isinstance(savepoint.description, FlinkSavepoint):
            return savepoint.description
        savepoint = savepoint.location
    if savepoint is None:
        raise UsageError(f"{role} is a savepoint not written anywhere yet")
    loc = Location.of(savepoint)
    if not is_flink_savepoint(loc) and loc.is_dir() and loc.child(METADATA).exists():
        raise UsageError(f"{role} {savepoint} is not an Apache Flink savepoint or checkpoint: check and "
                         "remap map a Flink job's state onto a new version of the job")
    return open_flink_savepoint(loc)  # NotASavepointError for what holds no _metadata


def resolve_choices(old: FlinkSavepoint, new: FlinkSavepoint, map: dict[str, str] | None, drop
                    ) -> tuple[dict[str, str], set[str]]:
    """The user's *map* and *drop* as operator ids, each name checked: one line for a name that
    names nothing, names several operators, or an operator named twice."""
    maps = {}
    for a, b in (map or {}).items():
        i, j = operator_id_of(old, a, "OLD"), operator_id_of(new, b, "NEW")
        if i in maps:
            raise UsageError(f"OLD operator {a} is mapped twice")
        if j in maps.values():
            raise UsageError(f"two OLD operators are mapped to NEW operator {b}")
        maps[i] = j
    drops = set()
    for a in drop or ():
        i = operator_id_of(old, a, "OLD")
        if i in maps or i in drops:
            raise UsageError(f"OLD operator {a} is both mapped and dropped, or dropped twice")
        drops.add(i)
    return maps, drops


def operator_id_of(fsp: FlinkSavepoint, name: str, role: str) -> str:
    """The operator id of the operator of *fsp* named *name*: its uid, its operator id or its name."""
    for field, wanted in (("uid", name), ("operator_id", name.lower()), ("name", name)):
        found = [op.operator_id for op in fsp.operators if getattr(op, field) == wanted]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UsageError(f"{role} has {len(found)} operators named {name!r} (ids {', '.join(found)}): "
                             "name one by its operator id")
    raise UnknownOperatorError(f"{role} has no operator with uid, operator id or name {name!r}")


def check_described(old: FlinkSavepoint, new: FlinkSavepoint, maps: dict[str, str] | None = None,
                    drops: set[str] | None = None) -> UpgradeCheck:
    """What NEW's job does with each operator and state of OLD (both described savepoints);
    *maps* ({OLD id: NEW id}) and *drops* (OLD ids) as :func:`.matching.match` takes them."""
    pairs, ambiguous, stateful = match(old, new, maps, drops)
    old_ops = {op.operator_id: op for op in old.operators}
    new_ops = {op.operator_id: op for op in new.operators}
    flink_2 = new.metadata.version >= 5  # Flink 2.x writes _metadata v5 and later
    checks = []
    for i in stateful:
        op = old_ops[i]
        if i in pairs:
            j, how = pairs[i]
            checks.append(operator_check(op, new_ops[j], how, flink_2))
        elif i in ambiguous:
            checks.append(OperatorCheck(label(op), i, AMBIGUOUS, candidates=tuple(
                label(new_ops[j]) for j in ambiguous[i])))
        else:
            checks.append(OperatorCheck(label(op), i, LOST))
    checks += [OperatorCheck(label(old_ops[i]), i, DROPPED) for i in sorted(drops or ()) if i in old_ops]
    targets = {j for j, _ in pairs.values()}
    empty = tuple(label(new_ops[j]) for j in sorted(stateful_ids(new) - targets, key=list(new_ops).index))
    return UpgradeCheck(str(old.location), str(new.location), tuple(checks), empty,
                        len(old.operators) - len(stateful_ids(old)))


def operator_check(old: FlinkOperatorInfo, new: FlinkOperatorInfo, how: str, flink_2: bool) -> OperatorCheck:
    status = RESTORED if old.operator_id == new.operator_id else MATCHED
    notes, max_p = [], None
    if old.parallelism != new.parallelism:
        notes.append(f"parallelism {old.parallelism} -> {new.parallelism} (Flink redistributes the state)")
    if old.max_parallelism != new.max_parallelism:
        max_p = (old.max_parallelism, new.max_parallelism)
        notes.append(f"max parallelism {old.max_parallelism} -> {new.max_parallelism}: the key groups "
                     "differ (statectl rescale)" if old.keyed_header is not None else
                     f"max parallelism {old.max_parallelism} -> {new.max_parallelism}")
    return OperatorCheck(label(old), old.operator_id, status, label(new), new.operator_id, how,
                         tuple(state_checks(old, new, flink_2)), tuple(notes), max_parallelism=max_p)


def state_checks(old: FlinkOperatorInfo, new: FlinkOperatorInfo, flink_2: bool) -> list[StateCheck]:
    """Each state of *old* as *new* registers it, then those only *new* registers."""
    out = [StateCheck(u.part, "", UNKNOWN, (f"cannot be compared: {u.reason}",)) for u in old.unreadable.values()]
    olds, news = states_of(old), states_of(new)
    if old.keyed_header is not None and new.keyed_header is not None:
        key = compare(old.key_type, new.key_type, "key", flink_2)
        if key.level != IDENTICAL:
            out.append(StateCheck(KEYED_PART, "key", key.level, key.reasons, key.values))
    for name, meta in olds.items():
        other = news.get(name)
        if other is None:
            out.append(StateCheck(name, meta.kind, NOT_REGISTERED, ("kept as is, unused by NEW",)))
        elif other.kind != meta.kind:
            out.append(StateCheck(name, meta.kind, INCOMPATIBLE, (f"a {meta.kind} state became a {other.kind} state",)))
        else:
            out.append(_state_check(name, meta, other, flink_2))
    out += [StateCheck(name, meta.kind, STARTS_EMPTY) for name, meta in news.items() if name not in olds]
    return out


def _state_check(name: str, meta, other, flink_2: bool) -> StateCheck:
    """One state both register: its verdict, a SQL accumulator row grown made partly compatible."""
    verdict = compare(meta.value, other.value, "", flink_2)
    key_bytes = False
    if meta.namespace is not None and other.namespace is not None:
        namespace = compare(meta.namespace, other.namespace, "namespace", flink_2)
        verdict, key_bytes = verdict + namespace, namespace.values
    if meta.kind == "map" and hasattr(meta.value, "key") and hasattr(other.value, "key"):  # in each entry's key
        key_bytes = key_bytes or compare(meta.value.key, other.value.key, "key", flink_2).values
    level, reasons = verdict.level, verdict.reasons
    if name in ACCUMULATOR_STATES and level == CONVERTIBLE and verdict.added:
        level = PARTLY
        reasons = tuple(r for r in reasons if r.split(": ", 1)[0] not in verdict.added) + tuple(
            f"{path}: an aggregate's accumulator appended (an aggregate added to the SELECT): it starts from its "
            "initial value for OLD's keys (remap --initial; COUNT 0, SUM, MIN, MAX null)" for path in verdict.added)
    return StateCheck(name, meta.kind, level, reasons, verdict.values, verdict.added, key_bytes)
