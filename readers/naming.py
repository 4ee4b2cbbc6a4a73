"""`NamedTables`: how both readers name what they read, with the same checks and errors.

Spark's :class:`readers.reader.SavepointReader` and the local
:class:`readers.local_reader.LocalSavepointReader` take the same arguments: operators named
as a user names them (uid, :class:`OperatorRef`, operator id), states, keys, a timer domain.
This base turns them into the :class:`readers.resolve.TableChoice` an engine reads; an engine
reads a choice in :meth:`NamedTables.table`.
"""

from __future__ import annotations

from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.vocabulary import OperatorStateKind

from .catalogue import views
from .explode import exploded_state
from .resolve import (
    KEYED,
    OPERATOR_STATE,
    TIMERS,
    TableChoice,
    check_domain,
    check_keyed,
    check_keyed_states,
    check_operator_state,
    choose_table,
    find_operator,
)

OperatorName = OperatorRef | str


class NamedTables:
    """A savepoint's tables named as a user names them; :meth:`table` is the engine's."""

    savepoint: Savepoint

    def table(self, choice: TableChoice):
        """The table a :class:`TableChoice` (see :meth:`choose`) names."""
        raise NotImplementedError

    def operator(self, operator: OperatorName) -> Operator:
        return find_operator(self.savepoint, operator)

    def choose(self, operator: OperatorName, states: list[str] | None = None,
               timers: bool = False) -> TableChoice:
        """The table `statectl read` reads for these options (see :func:`choose_table`)."""
        return choose_table(self.operator(operator), states, timers)

    def view_names(self) -> list[str]:
        """The names `sql` knows the tables by (see `readers.catalogue`)."""
        return [v.name for v in views(self.savepoint)]

    # --- operator state: one table each ---------------------------------------
    def operator_state(self, operator: OperatorName, name: str):
        """An operator state of any kind: ``value`` (list, union) or ``key``, ``value`` (broadcast)."""
        return self.table(self._operator_state_choice(operator, name, None))

    def list_state(self, operator: OperatorName, name: str):
        return self.table(self._operator_state_choice(operator, name, OperatorStateKind.LIST))

    def union_state(self, operator: OperatorName, name: str):
        return self.table(self._operator_state_choice(operator, name, OperatorStateKind.UNION))

    def broadcast_state(self, operator: OperatorName, name: str):
        return self.table(self._operator_state_choice(operator, name, OperatorStateKind.BROADCAST))

    # --- a read's arguments as a choice -----------------------------------------
    def _keyed_operator(self, operator: OperatorName) -> Operator:
        return check_keyed(self.operator(operator))

    def _keyed_choice(self, operator: OperatorName, states, keys, explode: bool):
        """(the keyed table to read, the list or map state *explode* flattens or None)."""
        op = self._keyed_operator(operator)
        chosen = check_keyed_states(op, states)
        flattened = exploded_state(TableChoice(op, KEYED, chosen)) if explode else None
        if flattened is not None:
            chosen = (flattened.name,)
        return TableChoice(op, KEYED, chosen, None if keys is None else tuple(keys)), flattened

    def _timers_choice(self, operator: OperatorName, domain: str | None, keys) -> TableChoice:
        op = self._keyed_operator(operator)
        check_domain(domain)
        return TableChoice(op, TIMERS, (), None if keys is None else tuple(keys))

    def _operator_state_choice(self, operator: OperatorName, name: str, kind: str | None) -> TableChoice:
        op = self.operator(operator)
        check_operator_state(op, name, kind)
        return TableChoice(op, OPERATOR_STATE, (name,))
