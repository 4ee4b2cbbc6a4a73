"""Naming what to read: an operator by uid or id, and a table of it. Pure metadata, no Spark."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.errors import UnknownStateError, UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import KEYED_PART, Operator, Savepoint, cannot_read
from statectl.statefmt.vocabulary import COORDINATOR_KIND, KeyedTable, TimerDomain

KEYED, TIMERS = KeyedTable.KEYED, KeyedTable.TIMERS
OPERATOR_STATE = "operator"


def find_operator(sp: Savepoint, operator: OperatorRef | str) -> Operator:
    """The operator named by an :class:`OperatorRef` or a uid (see :meth:`Savepoint.operator`)."""
    return sp.operator(operator)


@dataclass(frozen=True)
class TableChoice:
    """One readable table of an operator: its keyed table, its timers, or an operator state."""

    operator: Operator
    kind: str  # KEYED, TIMERS or OPERATOR_STATE
    states: tuple[str, ...] = ()  # KEYED: chosen keyed states (all if empty); else the state
    keys: tuple | None = None  # KEYED, TIMERS: only these keys, or their KeyFilter (readers/keys.py)

    @property
    def table(self) -> str:
        """The table as a table source names it: KEYED, TIMERS or the operator state's name."""
        return self.states[0] if self.kind == OPERATOR_STATE else self.kind

    @property
    def description(self) -> str:
        if self.kind == KEYED:
            return f"keyed state of {self.operator.label}"
        if self.kind == TIMERS:
            return f"timers of {self.operator.label}"
        return f"operator state {self.states[0]!r} of {self.operator.label}"


def describe_states(op: Operator) -> str:
    """Every state of *op*, for error messages: ``keyed: a, b; operator: c (union)``."""
    parts = []
    if op.keyed is not None and op.keyed.states:
        parts.append("keyed states: " + ", ".join(s.name for s in op.keyed.states))
    if op.operator_states:
        parts.append("operator states: " + ", ".join(
            f"{s.name} ({s.kind})" for s in op.operator_states))
    if op.unreadable:
        parts.append("unreadable: " + ", ".join(u.part for u in op.unreadable))
    return "; ".join(parts) if parts else "no states"


def check_readable(op: Operator, part: str) -> None:
    """One error line when *part* (:data:`KEYED_PART` or an operator state) of *op* cannot be read."""
    u = op.unreadable_part(part)
    if u is not None:
        raise cannot_read(op.label, part, u.reason)


def check_keyed(op: Operator) -> Operator:
    """*op*, refused in one line when its keyed part cannot be read or it holds no keyed state."""
    check_readable(op, KEYED_PART)
    if op.keyed is None:
        raise UnknownStateError(f"operator {op.label} has no keyed state; it has {describe_states(op)}")
    return op


def check_keyed_states(op: Operator, states) -> tuple[str, ...]:
    """The chosen keyed state names, deduplicated, each checked to exist."""
    if states is None:
        return ()
    if isinstance(states, str):
        states = [states]
    check_keyed(op)
    known = {s.name for s in op.keyed.states}
    chosen = tuple(dict.fromkeys(states))
    for name in chosen:
        if name not in known:
            raise UnknownStateError(
                f"operator {op.label} has no keyed state {name!r}; it has {describe_states(op)}")
    return chosen


def check_operator_state(op: Operator, name: str, kind: str | None = None):
    """The operator state *name* of *op*, of *kind* if given."""
    check_readable(op, name)
    for s in op.operator_states:
        if s.name == name:
            if kind is not None and s.kind != kind:
                raise UnknownStateError(
                    f"operator state {name!r} of {op.label} is {s.kind} state, not {kind} state")
            return s
    raise UnknownStateError(
        f"operator {op.label} has no operator state {name!r}; it has {describe_states(op)}")


def choose_table(op: Operator, states: list[str] | None = None, timers: bool = False) -> TableChoice:
    """What `statectl read` shows for an operator and its ``--state``/``--timers`` options.

    No state named: the keyed table, else the only operator state. Names of keyed
    states restrict the keyed table; one operator state name selects that state.
    """
    states = list(dict.fromkeys(states or []))
    for name in states:
        check_readable(op, name)
    if timers:
        if states:
            raise UsageError("--timers reads the timers table; do not combine it with --state")
        check_readable(op, KEYED_PART)
        if op.keyed is None:
            raise UnknownStateError(f"operator {op.label} has no keyed state, so no timers; "
                                    f"it has {describe_states(op)}")
        return TableChoice(op, TIMERS)
    if not states:
        if op.keyed is not None:
            return TableChoice(op, KEYED)
        check_readable(op, KEYED_PART)
        own = [s for s in op.operator_states if s.kind != COORDINATOR_KIND] or list(op.operator_states)
        if len(own) == 1:  # a source's coordinator state is read when named, or alone
            return TableChoice(op, OPERATOR_STATE, (own[0].name,))
        if not op.operator_states:
            raise UnknownStateError(f"operator {op.label} has no state")
        raise UsageError(f"operator {op.label} has several states; choose one with --state: "
                         f"{describe_states(op)}")
    operator_names = {s.name for s in op.operator_states}
    chosen_operator = [s for s in states if s in operator_names]
    if chosen_operator:
        if len(states) > 1:
            raise UsageError(f"operator state {chosen_operator[0]!r} is a table of its own; "
                             "read it alone (several --state options are for keyed states)")
        return TableChoice(op, OPERATOR_STATE, (states[0],))
    return TableChoice(op, KEYED, check_keyed_states(op, states))


def check_domain(domain: str | None) -> None:
    """A timer domain to keep (``event``, ``processing``) or None (both)."""
    if domain is not None and domain not in TimerDomain.words():
        raise UsageError(f"timer domain must be one of {', '.join(TimerDomain)}, got {domain!r}")

