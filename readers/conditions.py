"""A Spark SQL condition a user gives (``read --where``, ``prune --where``) over a table: the
rows it selects, or those it does not; a condition Spark cannot parse or resolve is one
:class:`UsageError` line naming the option."""

from __future__ import annotations

from statectl.statefmt.errors import UsageError, first_line


def selected(df, where: str, option: str = "--where"):
    """The rows of *df* for which *where* is true."""
    return _filter(df, where, option, keep=True)


def not_selected(df, where: str, option: str = "--where"):
    """The rows of *df* for which *where* is not true (false or null)."""
    return _filter(df, where, option, keep=False)


def _filter(df, where: str, option: str, keep: bool):
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        if keep:
            return df.filter(where)
        return df.filter(~F.coalesce(F.expr(where).cast("boolean"), F.lit(False)))
    except PySparkException as e:
        raise UsageError(f"{option} {where!r}: {first_line(e)}") from None
