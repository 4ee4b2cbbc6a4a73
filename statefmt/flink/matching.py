"""Which operator of a new job takes over each operator of an old savepoint that holds state.

An operator of OLD whose operator id NEW has is restored there by Flink itself. Each other one
is matched by the first of :data:`TIERS` (uid, name, SQL node kind with its states, SQL node
kind, state names and types, state names) that pairs it with exactly one operator of NEW not
taken yet; one that several would fit is *ambiguous*. The user's ``--map`` and ``--drop`` come
first. Only `_metadata` and the streams' headers are used.
"""

from __future__ import annotations

import re

from .describe import FlinkOperatorInfo, FlinkSavepoint

_SQL_NAME = re.compile(r"^(\w+)\[\d+\]$")


# --- signatures: how an OLD operator is recognised in NEW, in order -------------------------

def sql_kind(name: str | None) -> str | None:
    """A SQL operator's node kind (``GroupAggregate`` of ``GroupAggregate[7]``), else None."""
    m = _SQL_NAME.match(name or "")
    return m.group(1) if m else None


def state_signature(info: FlinkOperatorInfo, types: bool = True):
    """An operator's states by name and kind (and serializer snapshot, with *types*), or None."""
    metas = states_of(info)
    if not metas:
        return None
    key = repr(info.key_type) if types and info.key_type is not None else None
    return key, tuple(sorted((n, m.kind, repr(m.value) if types else "") for n, m in metas.items()))


def _kind_and_state(info: FlinkOperatorInfo):
    kind = sql_kind(info.name)
    return None if kind is None else (kind, state_signature(info))


# (why, signature, in plan order): a tier in plan order also pairs equal numbers of operators of
# one signature on both sides by their SQL node numbers (the planner numbers a statement set's
# nodes statement by statement, so one more statement shifts them all alike).
TIERS = (
    ("uid", lambda i: i.uid, False),
    ("name", lambda i: None if sql_kind(i.name) else i.name, False),  # SQL node numbers shift
    ("SQL node kind and state", _kind_and_state, False),
    ("SQL node kind", lambda i: sql_kind(i.name), False),
    ("SQL node kind and state, in plan order", _kind_and_state, True),
    ("state names and types", state_signature, False),
    ("state names", lambda i: state_signature(i, types=False), False),
)


def label(info: FlinkOperatorInfo) -> str:
    """How check and remap name an operator: its uid, else its name, else its operator id."""
    return info.uid or info.name or info.operator_id


def node_number(info: FlinkOperatorInfo) -> int:
    return int(info.name.rsplit("[", 1)[1][:-1])


def states_of(info: FlinkOperatorInfo) -> dict:
    keyed = {s.name: s for s in info.keyed_header.states} if info.keyed_header is not None else {}
    return {**keyed, **info.operator_states}


def stateful_ids(fsp: FlinkSavepoint) -> set[str]:
    """The operators `_metadata` gives any state (a coordinator's counts: Flink refuses to drop
    it without allowNonRestoredState, as any other state)."""
    return {op.operator_id for op in fsp.metadata.operators if op.coordinator is not None or any(
        s.managed_keyed is not None or s.raw_keyed is not None or s.managed_operator or s.raw_operator
        for s in op.subtasks)}


# --- matching --------------------------------------------------------------------------------

def match(old: FlinkSavepoint, new: FlinkSavepoint, maps: dict[str, str] | None = None,
          drops: set[str] | None = None):
    """(pairs {OLD id: (NEW id, how)}, ambiguous {OLD id: NEW candidates' ids}, OLD's stateful
    ids) of two savepoints; *maps* ({OLD id: NEW id}) and *drops* (OLD ids) are the user's."""
    maps, drops = maps or {}, drops or set()
    new_ids = {op.operator_id for op in new.operators}
    holding = stateful_ids(old)
    stateful = [op for op in old.operators if op.operator_id in holding and op.operator_id not in drops]
    pairs = {i: (j, "--map") for i, j in maps.items()}
    pairs.update({op.operator_id: (op.operator_id, "same operator id") for op in stateful
                  if op.operator_id in new_ids and op.operator_id not in pairs})
    taken = {j for j, _ in pairs.values()}
    todo = [op for op in stateful if op.operator_id not in pairs]
    free = [op for op in new.operators if op.operator_id not in taken]
    ambiguous: dict[str, list[str]] = {}
    for how, signature, ordered in TIERS:
        by_old, by_new = _grouped(todo, signature), _grouped(free, signature)
        paired = set()
        for sig, olds in by_old.items():
            news = by_new.get(sig, [])
            if len(olds) == len(news) and (len(olds) == 1 or ordered):
                for i, j in zip(olds, news):  # in node number order (see _grouped)
                    pairs[i] = (j, how)
                    paired.update((i, j))
            elif news:
                for i in olds:
                    ambiguous.setdefault(i, news)
        todo = [op for op in todo if op.operator_id not in paired]
        free = [op for op in free if op.operator_id not in paired]
    return pairs, {i: c for i, c in ambiguous.items() if i not in pairs}, [op.operator_id for op in stateful]


def _grouped(operators: list[FlinkOperatorInfo], signature) -> dict:
    """Operators by signature (None: none), as operator ids; a SQL kind's in node number order."""
    groups: dict = {}
    for op in operators:
        sig = signature(op)
        if sig is not None:
            groups.setdefault(sig, []).append(op)
    return {sig: [o.operator_id for o in sorted(ops, key=lambda o: node_number(o) if sql_kind(o.name) else 0)]
            for sig, ops in groups.items()}
