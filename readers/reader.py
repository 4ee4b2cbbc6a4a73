"""`open_savepoint`: a savepoint as a small database of Spark DataFrames."""

from __future__ import annotations

from statefmt.errors import UsageError
from statefmt.fs import Location
from statefmt.ids import OperatorRef
from statefmt.model import Operator, Savepoint
from statefmt.savepoint import load

from .catalogue import catalogue_frame, views
from .files import Split, file_key, hadoop_uri
from .keyed import keyed_table, timers_table
from .operator_state import operator_state_table
from .resolve import (
    KEYED,
    TIMERS,
    TableChoice,
    check_keyed_states,
    check_operator_state,
    choose_table,
    describe_states,
    find_operator,
)
from .verify import verify_splits

OperatorName = OperatorRef | str


def open_savepoint(spark, location: str | Location | Savepoint) -> "SavepointReader":
    """Open a savepoint (path, URI or loaded :class:`Savepoint`) for reading with *spark*."""
    sp = location if isinstance(location, Savepoint) else load(location)
    return SavepointReader(spark, sp)


class SavepointReader:
    """Every state of a savepoint as a DataFrame.

    Operators are named by uid, by :class:`OperatorRef`, or by operator id when
    the uid is unknown. Each method checks the files it will read (size,
    sha256, footer) in one Spark job before returning; a file is checked once
    per reader. DataFrames are lazy: the rows are read by Spark's executors.
    """

    def __init__(self, spark, savepoint: Savepoint):
        if savepoint.location is None:
            raise UsageError("the savepoint must be read from a location")
        self.spark = spark
        self.savepoint = savepoint
        self._verified: set[str] = set()

    # --- metadata -----------------------------------------------------------
    def operator(self, operator: OperatorName) -> Operator:
        return find_operator(self.savepoint, operator)

    def catalogue(self):
        """One row per state: uid, operator id, state, scope, kind, type, key, namespace,
        parallelism, max parallelism, files, rows, bytes and its `sql` view name."""
        return catalogue_frame(self.spark, self.savepoint)

    # --- state tables -------------------------------------------------------
    def keyed(self, operator: OperatorName, states: str | list[str] | None = None, *,
              key_groups: tuple[int, int] | None = None, include_key_group: bool = False):
        """The keyed table: key column(s), ``namespace`` if any, one column per keyed state.

        *states* keeps only those columns and the rows with a value in one of them.
        """
        op = self._keyed_operator(operator)
        chosen = check_keyed_states(op, states)
        return self._verified_frame(keyed_table(
            self.spark, self.savepoint, op, chosen, key_groups, include_key_group))

    def timers(self, operator: OperatorName, domain: str | None = None, *,
               key_groups: tuple[int, int] | None = None, include_key_group: bool = False):
        """Timers: key column(s), ``namespace`` if any, ``timestamp``, ``domain``."""
        op = self._keyed_operator(operator)
        return self._verified_frame(timers_table(
            self.spark, self.savepoint, op, domain, key_groups, include_key_group))

    def operator_state(self, operator: OperatorName, name: str):
        """An operator state of any kind: ``value`` (list, union) or ``key``, ``value`` (broadcast)."""
        return self._operator_state(operator, name, None)

    def list_state(self, operator: OperatorName, name: str):
        return self._operator_state(operator, name, "list")

    def union_state(self, operator: OperatorName, name: str):
        return self._operator_state(operator, name, "union")

    def broadcast_state(self, operator: OperatorName, name: str):
        return self._operator_state(operator, name, "broadcast")

    def table(self, choice: TableChoice):
        """The table a :class:`TableChoice` (see :func:`choose_table`) names."""
        return self._verified_frame(self._frame(choice))

    def choose(self, operator: OperatorName, states: list[str] | None = None,
               timers: bool = False) -> TableChoice:
        return choose_table(self.operator(operator), states, timers)

    # --- SQL ----------------------------------------------------------------
    def view_names(self) -> list[str]:
        return [v.name for v in views(self.savepoint)]

    def register_views(self) -> list[str]:
        """Register every state as a temporary view (names: see `readers.catalogue`)."""
        frames = []
        for view in views(self.savepoint):
            df, parts = self._view_frame(view)
            frames.append((view.name, df))
            self._verify([p for p in parts])
        for name, df in frames:
            df.createOrReplaceTempView(_quoted(name))
        return [name for name, _ in frames]

    def sql(self, query: str):
        """Run *query* over every state's view; only the files it reads are checked.

        The views exist while the query is analysed and are dropped afterwards.
        """
        from pyspark.errors import PySparkException

        registered, by_key = [], {}
        try:
            for view in views(self.savepoint):
                df, parts = self._view_frame(view)
                df.createOrReplaceTempView(_quoted(view.name))
                registered.append(view.name)
                for p in parts:
                    by_key[file_key(hadoop_uri(p.location))] = p
            try:
                result = self.spark.sql(query)
            except PySparkException as e:
                raise UsageError(f"query failed: {spark_message(e)}") from None
        finally:
            for name in registered:
                self.spark.catalog.dropTempView(_quoted(name))
        used = {file_key(uri) for uri in result.inputFiles()}
        self._verify([p for key, p in by_key.items() if key in used])
        return result

    # --- internals ----------------------------------------------------------
    def _keyed_operator(self, operator: OperatorName) -> Operator:
        op = self.operator(operator)
        if op.keyed is None:
            from statefmt.errors import UnknownStateError

            raise UnknownStateError(
                f"operator {op.label} has no keyed state; it has {describe_states(op)}")
        return op

    def _operator_state(self, operator: OperatorName, name: str, kind: str | None):
        op = self.operator(operator)
        state = check_operator_state(op, name, kind)
        return self._verified_frame(operator_state_table(self.spark, self.savepoint, state))

    def _frame(self, choice: TableChoice):
        op = choice.operator
        if choice.kind == KEYED:
            return keyed_table(self.spark, self.savepoint, op, choice.states)
        if choice.kind == TIMERS:
            return timers_table(self.spark, self.savepoint, op)
        return operator_state_table(self.spark, self.savepoint,
                                    check_operator_state(op, choice.states[0]))

    def _view_frame(self, view):
        if view.choice is None:
            return self.catalogue(), []
        return self._frame(view.choice)

    def _verified_frame(self, frame_and_splits):
        df, parts = frame_and_splits
        self._verify(parts)
        return df

    def _verify(self, parts: list[Split]) -> None:
        todo = [p for p in parts if p.location.uri not in self._verified]
        verify_splits(self.spark, todo)
        self._verified.update(p.location.uri for p in todo)


def _quoted(view_name: str) -> str:
    return "`" + view_name.replace("`", "``") + "`"


def spark_message(e: Exception) -> str:
    """The first line of a Spark error, without the plan Spark appends."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
