"""`statectl read` and `statectl sql`: savepoint state through Spark, printed or written.

Everything that needs only `_metadata` (which operator, which state, option
checks) is settled before Spark starts, so mistakes fail fast and without a JVM.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Optional

import typer

from statefmt.errors import StatectlError, UsageError

from .output import FRAME_FORMATS, check_frame_output, write_frame

_FORMAT_HELP = f"Output format: {', '.join(FRAME_FORMATS)}. parquet needs --output."
_MASTER_HELP = "Spark master URL (default: SPARK_MASTER, spark-submit's, else local[*])."


def register(app: typer.Typer) -> None:
    app.command("read")(read)
    app.command("sql")(sql)


def read(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI)."),
    uid: Optional[str] = typer.Option(None, "--uid", help="The operator's uid."),
    operator_id: Optional[str] = typer.Option(
        None, "--operator-id", help="The operator's id (32 hex digits), when its uid is unknown."),
    state: Optional[list[str]] = typer.Option(
        None, "--state", help="A keyed state (repeatable: keyed table restricted to these "
        "states) or one operator state. Default: the keyed table, or the only operator state."),
    timers: bool = typer.Option(False, "--timers", help="Read the operator's timers."),
    fmt: str = typer.Option("table", "--format", "-f", help=_FORMAT_HELP),
    output: Optional[str] = typer.Option(None, "--output", "-o",
                                         help="Write to this file (directory for parquet)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most this many rows."),
    where: Optional[str] = typer.Option(None, "--where", help="Keep rows matching a Spark SQL "
                                        "condition, e.g. \"count > 10\"."),
    master: Optional[str] = typer.Option(None, "--master", help=_MASTER_HELP),
) -> None:
    """Read one operator's keyed table, timers, or an operator state."""
    from readers import SavepointReader, find_operator
    from readers.resolve import choose_table
    from statefmt.ids import OperatorRef
    from statefmt.savepoint import load

    check_frame_output(fmt, output)
    sp = load(savepoint)
    if (uid is None) == (operator_id is None):
        raise UsageError("name the operator with exactly one of --uid or --operator-id; "
                         f"operators: {sp.operator_labels()}")
    op = find_operator(sp, OperatorRef(uid=uid) if uid is not None else OperatorRef(operator_id=operator_id))
    choice = choose_table(op, state, timers)
    with spark_errors():
        reader = SavepointReader(start_spark(master), sp)
        df = reader.table(choice)
        if where:
            df = filtered(df, where)
        write_frame(df, fmt, output, limit)


def sql(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI)."),
    query: str = typer.Argument(..., help="A Spark SQL query over the savepoint's views: "
                                "`<uid>` keyed table, `<uid>.timers`, `<uid>.<state>` "
                                "operator state, `catalogue` (quote dotted names in backticks)."),
    fmt: str = typer.Option("table", "--format", "-f", help=_FORMAT_HELP),
    output: Optional[str] = typer.Option(None, "--output", "-o",
                                         help="Write to this file (directory for parquet)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most this many rows."),
    master: Optional[str] = typer.Option(None, "--master", help=_MASTER_HELP),
) -> None:
    """Run a Spark SQL query over every state of a savepoint."""
    from readers import SavepointReader
    from statefmt.savepoint import load

    check_frame_output(fmt, output)
    sp = load(savepoint)
    with spark_errors():
        reader = SavepointReader(start_spark(master), sp)
        write_frame(reader.sql(query), fmt, output, limit)


def filtered(df, where: str):
    """*df* filtered by a SQL condition; a condition Spark cannot parse or resolve is a UsageError."""
    from pyspark.errors import PySparkException

    from readers.reader import spark_message

    try:
        return df.filter(where)
    except PySparkException as e:
        raise UsageError(f"--where {where!r}: {spark_message(e)}") from None


def _debug() -> bool:
    from .main import _options

    return bool(_options.get("debug"))


def start_spark(master: str | None):
    """The Spark session, with the JVM's own output (log lines, warnings) kept off the terminal.

    The JVM inherits standard output and error from this process when it
    starts, so both point at /dev/null while it starts (not with --debug).
    """
    from .spark import spark_session

    if _debug():
        return spark_session(master)
    _quiet_pyspark_loggers()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        return spark_session(master)
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def _quiet_pyspark_loggers() -> None:
    """PySpark logs every failed query's error as JSON to stderr; the CLI prints it once."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def spark_errors():
    """Spark's errors (bad SQL, a failed job, no JVM) as one-line StatectlErrors."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JError

    try:
        yield
    except StatectlError:
        raise
    except (PySparkException, Py4JError) as e:
        if _debug():
            raise
        from readers.reader import spark_message

        hint = " (--debug shows Spark's own output)" if "JAVA_GATEWAY" in str(e) else ""
        raise StatectlError(f"Spark failed: {spark_message(e)}{hint}") from None
