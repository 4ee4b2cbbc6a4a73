"""`open_savepoint`, and `SavepointReader`: a savepoint as a small database of Spark DataFrames."""

from __future__ import annotations

import os
import re

from statectl.statefmt.errors import StatectlError, UsageError, first_line
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import KEYED_PART, Savepoint
from statectl.statefmt.formats import load
from statectl.statefmt.types import quote_identifier
from statectl.statefmt.validate import files_with_schemas

from .catalogue import View, catalogue_frame, views
from .explode import explode_frame
from .files import Split, is_connect, spark_file_key, split_key, splits
from .keyed import keyed_table, timers_table
from .operator_state import operator_state_table
from .naming import NamedTables
from .resolve import KEYED, TIMERS, TableChoice, check_operator_state, check_readable
from .sources import table_source
from .verify import verify_splits

OperatorName = OperatorRef | str


def open_savepoint(source=None, location: str | Location | Savepoint | None = None, *, spark=None):
    """Open a savepoint (path, URI or loaded :class:`Savepoint`) for reading.

    ``open_savepoint(path)`` reads in this process, without Spark: a
    :class:`LocalSavepointReader`, whose tables are ``pyarrow.Table`` s.
    ``open_savepoint(path, spark=spark)`` (or the earlier form ``open_savepoint(spark, path)``,
    also with keywords ``spark=``, ``location=``) reads with that session: a
    :class:`SavepointReader`, whose tables are DataFrames.
    """
    if location is None:
        location = source
    elif source is not None and spark is not None:
        raise UsageError("open_savepoint: give the session once, as open_savepoint(path, spark=spark)")
    elif source is not None:
        spark = source
    if not _is_location(location):
        raise UsageError(f"open_savepoint: expected a savepoint's path, URI or Savepoint, got "
                         f"{type(location).__name__} (open_savepoint(path) or "
                         "open_savepoint(path, spark=spark))")
    sp = location if isinstance(location, Savepoint) else load(_as_location(location))
    if spark is None:
        from .local_reader import LocalSavepointReader

        return LocalSavepointReader(sp)
    return SavepointReader(spark, sp)


def _is_location(value) -> bool:
    return isinstance(value, (str, os.PathLike, Location, Savepoint))


def _as_location(value):
    return os.fspath(value) if isinstance(value, os.PathLike) else value


class SavepointReader(NamedTables):
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
    def catalogue(self):
        """One row per state: uid, operator id, state, scope, kind, type, key, namespace,
        parallelism, max parallelism, files, rows, bytes and its `sql` view name."""
        return catalogue_frame(self.spark, self.savepoint)

    # --- state tables -------------------------------------------------------
    def keyed(self, operator: OperatorName, states: str | list[str] | None = None, *,
              key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
              keys: list | None = None, explode: bool = False):
        """The keyed table: key column(s), ``namespace`` if any, one column per keyed state.

        *states* keeps only those columns and the rows with a value in one of them.
        *key_groups* ``(first, last)`` reads only that range of key groups. *keys*
        keeps only those keys (a value each, a sequence for a tuple key), reading
        only the key groups that can hold them. *explode* flattens the one list or map
        state (of *states*, or the operator's only one) into a row per element (``index``)
        or entry (``map_key``), as ``read --explode`` does.
        """
        choice, flattened = self._keyed_choice(operator, states, keys, explode)
        op = choice.operator
        df = keyed_table(self.spark, self.savepoint, op, choice.states, key_groups, include_key_group,
                         verify=self._verify, keys=choice.keys)[0]
        return explode_frame(df, op, flattened) if flattened is not None else df

    def timers(self, operator: OperatorName, domain: str | None = None, *,
               key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
               keys: list | None = None):
        """Timers: key column(s), ``namespace`` if any, ``timestamp``, ``domain`` (and a
        Flink timer's ``service``); *keys* as for :meth:`keyed`."""
        choice = self._timers_choice(operator, domain, keys)
        return timers_table(self.spark, self.savepoint, choice.operator, domain, key_groups,
                            include_key_group, verify=self._verify, keys=choice.keys)[0]

    def table(self, choice: TableChoice):
        """The table a :class:`TableChoice` (see :func:`choose_table`) names."""
        return self._frame(choice, self._verify)[0]

    # --- SQL ----------------------------------------------------------------
    def register_views(self) -> list[str]:
        """Register every state as a temporary view (names: see `statectl.readers.catalogue`).

        Every file of the savepoint is checked first, in one Spark job.
        """
        self._verify([p for _, f, schema in files_with_schemas(self.savepoint)
                      for p in splits(self.savepoint, [f], schema)])
        names = []
        for view in views(self.savepoint):
            self._view_frame(view)[0].createOrReplaceTempView(quote_identifier(view.name))
            names.append(view.name)
        return names

    def sql(self, query: str):
        """Run *query* over the views it names; only the files it reads are checked.

        A view's table is planned (its Data Source read set up) only when the query names
        it: the views whose names the query's text holds (:func:`_named_in`, a superset) are
        registered before Spark analyses it, so the analysis never asks the session catalog for
        a name (which creates a `spark-warehouse` folder in the working directory). A view that
        cannot be registered fails the query only if the query reads it (Spark's analysis then
        misses it): a view whose files are missing with the missing file. The views exist
        while the query is analysed and are dropped afterwards (over Spark Connect, where the
        query is analysed when it runs, they stay in the session).
        """
        from pyspark.errors import PySparkException

        registered, by_key, broken = [], {}, {}
        try:
            for view in _named_in(query, views(self.savepoint)):
                try:
                    by_key.update(self._register(view))
                    registered.append(view.name)
                except (StatectlError, PySparkException) as e:
                    broken[view.name.lower()] = e
            try:
                result = self.spark.sql(query)
            except PySparkException as e:
                failure = broken.get(_missing_relation(e))
                if failure is not None:
                    raise failure from None
                self._explain_failure(e)
        finally:
            # a Spark Connect query is analysed when it runs, after this: its views stay (the
            # session is the command's own, released when it ends; docs/ENGINE.md)
            for name in registered if not is_connect(self.spark) else ():
                self.spark.catalog.dropTempView(name)
        used = {spark_file_key(uri) for uri in result.inputFiles()}
        self._verify([p for key, p in by_key.items() if key in used])
        return result

    # --- internals ----------------------------------------------------------
    def _register(self, view: View) -> dict:
        """Register *view* for a query: its checked splits by file key. A view whose files
        are missing raises the first missing file's error."""
        from pyspark.errors import PySparkException

        try:
            df, parts = self._view_frame(view)
        except PySparkException as e:
            if not (e.getCondition() or "").startswith("PATH_NOT_FOUND"):
                raise
            self._verify(self._frame_splits(view))  # raises the missing file's error
            raise
        df.createOrReplaceTempView(quote_identifier(view.name))
        return {split_key(p.location): p for p in parts}

    def _explain_failure(self, e) -> None:
        if type(e).__name__ == "SparkConnectGrpcException":  # the server, not the query
            raise e
        hint = ""
        if (e.getCondition() or "").startswith("TABLE_OR_VIEW_NOT_FOUND"):
            self._refuse_unreadable(_missing_relation(e))
            hint = " Views: " + ", ".join(_sql_name(v.name) for v in views(self.savepoint))
        raise UsageError(f"query failed: {first_line(e)}{hint}") from None

    def _refuse_unreadable(self, view_name: str) -> None:
        """A query naming the view an unreadable part would have: that part's one line."""
        for op in self.savepoint.operators:
            for label in {op.label, op.name} - {None}:
                if view_name in (label.lower(), f"{label}.timers".lower()):
                    check_readable(op, KEYED_PART)
                for part in op.unreadable:
                    if view_name == f"{label}.{part.part}".lower():
                        check_readable(op, part.part)

    def _frame(self, choice: TableChoice, verify=None):
        op = choice.operator
        if choice.kind == KEYED:
            return keyed_table(self.spark, self.savepoint, op, choice.states, verify=verify,
                               keys=choice.keys)
        if choice.kind == TIMERS:
            return timers_table(self.spark, self.savepoint, op, verify=verify, keys=choice.keys)
        state = check_operator_state(op, choice.states[0])
        return operator_state_table(self.spark, self.savepoint, op, state, verify)

    def _view_frame(self, view: View):
        if view.choice is None:
            return self.catalogue(), []
        return self._frame(view.choice)

    def _frame_splits(self, view: View) -> list[Split]:
        """The files a view's table checks before it is read (all of them), without Spark."""
        return table_source(self.savepoint, view.choice.operator).checked_files(view.choice.table)

    def _verify(self, parts: list[Split]) -> None:
        todo = [p for p in parts if p.location.uri not in self._verified]
        verify_splits(self.spark, todo)
        self._verified.update(p.location.uri for p in todo)


def _missing_relation(e) -> str | None:
    """The view a query names that Spark's analysis did not find, as `views` names it
    (lower case, unquoted), or None for another failure."""
    if not (e.getCondition() or "").startswith("TABLE_OR_VIEW_NOT_FOUND"):
        return None
    name = (e.getMessageParameters() or {}).get("relationName", "")
    return name.strip("`").replace("``", "`").lower()


def _named_in(query: str, candidates: list[View]) -> list[View]:
    """The views whose names *query* holds, as Spark compares names (case-insensitively),
    written plain or between backticks (where a backtick of the name is doubled)."""
    text = query.lower()
    return [v for v in candidates if v.name.lower() in text or v.name.lower().replace("`", "``") in text]


def _sql_name(view_name: str) -> str:
    """How a view is written in a query: plain when it is a simple identifier."""
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", view_name)
    return view_name if plain else quote_identifier(view_name)


