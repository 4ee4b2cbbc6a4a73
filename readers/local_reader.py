"""`LocalSavepointReader`: a savepoint's tables as ``pyarrow.Table`` s, read without Spark.

What ``open_savepoint(path)`` returns when no Spark session is given. It names tables as
:class:`readers.reader.SavepointReader` does (the same :class:`readers.naming.NamedTables`,
so the same checks and errors) and reads them with the local engine (`readers.local`): the
same table sources decode the same splits in this process, each file verified as the Spark
path verifies it, so the rows are those Spark gives, with the types Spark shows. No JVM is
started and `pyspark` is not imported. ``table.to_pandas()`` gives a pandas DataFrame.

What only Spark does (`sql`, `register_views`: Spark SQL) raises :class:`SparkRequiredError`.
Everything is read into memory: for a large table, open the savepoint with a session.
"""

from __future__ import annotations

from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import Savepoint

from .naming import NamedTables
from .resolve import TableChoice

OperatorName = OperatorRef | str


class SparkRequiredError(UsageError):
    """What was asked is Spark's work (Spark SQL), and the savepoint was opened without a session."""


class LocalSavepointReader(NamedTables):
    """Every state of a savepoint as a ``pyarrow.Table``, decoded in this process.

    The methods are :class:`SavepointReader`'s, with the same arguments and the same rows;
    each returns a ``pyarrow.Table`` (``.to_pandas()`` for pandas) instead of a DataFrame.
    """

    def __init__(self, savepoint: Savepoint):
        if savepoint.location is None:
            raise UsageError("the savepoint must be read from a location")
        self.savepoint = savepoint

    # --- metadata -----------------------------------------------------------
    def catalogue(self):
        """One row per state, the columns of :meth:`SavepointReader.catalogue`."""
        from .catalogue import catalogue_table

        return catalogue_table(self.savepoint)

    # --- state tables -------------------------------------------------------
    def keyed(self, operator: OperatorName, states: str | list[str] | None = None, *,
              key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
              keys: list | None = None, explode: bool = False):
        """The keyed table; the arguments are :meth:`SavepointReader.keyed`'s."""
        from .local import local_table

        choice, flattened = self._keyed_choice(operator, states, keys, explode)
        table = local_table(self.savepoint, choice, include_key_group=include_key_group,
                            key_groups=key_groups)
        if flattened is None:
            return table
        from .explode import explode_table

        return explode_table(table, choice.operator, flattened)

    def timers(self, operator: OperatorName, domain: str | None = None, *,
               key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
               keys: list | None = None):
        """Timers; the arguments are :meth:`SavepointReader.timers`'s."""
        import pyarrow.compute as pc

        from .local import local_table

        choice = self._timers_choice(operator, domain, keys)
        table = local_table(self.savepoint, choice, include_key_group=include_key_group,
                            key_groups=key_groups)
        return table if domain is None else table.filter(pc.equal(table.column("domain"), domain))

    def table(self, choice: TableChoice):
        """The table a :class:`TableChoice` (see :meth:`choose`) names."""
        from .local import local_table

        return local_table(self.savepoint, choice)

    # --- Spark's work -------------------------------------------------------
    def sql(self, query: str):
        raise _needs_spark("sql")

    def register_views(self):
        raise _needs_spark("register_views")


def _needs_spark(what: str) -> SparkRequiredError:
    return SparkRequiredError(f"{what} runs Spark SQL: open the savepoint with a session, "
                              "open_savepoint(path, spark=spark)")
