"""`statectl read` and `statectl sql`: savepoint state through Spark, printed or written.

Everything that needs only `_metadata` (which operator, which state, option
checks) is settled before Spark starts, so mistakes fail fast and without a JVM.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from statectl.statefmt.errors import UsageError

from .classes import Classes, use_classes
from .listing import Checkpoint
from .snapshots import opened
from .progress import scan_progress
from .results import FRAME_FORMATS, check_frame_output
from .spark import MASTER_HELP as _MASTER_HELP
from .spark import spark_errors, start_spark

_FORMAT_HELP = f"Output format: {', '.join(FRAME_FORMATS)}. parquet needs --output."

# The arguments `read` and `sql` share: the savepoint, where and how the rows go, the Spark master.
Savepoint = Annotated[str, typer.Argument(help="Savepoint directory (a path or URI), or a folder of "
                                          "snapshots (the newest is read).")]
Format = Annotated[str, typer.Option("--format", "-f", help=_FORMAT_HELP)]
Output = Annotated[Optional[str], typer.Option("--output", "-o",
                                               help="Write to this file (directory for parquet).")]
Limit = Annotated[Optional[int], typer.Option("--limit", min=0, help="At most this many rows.")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing --output.")]
Master = Annotated[Optional[str], typer.Option("--master", help=_MASTER_HELP)]
Remote = Annotated[Optional[str], typer.Option(
    "--remote", help="A Spark Connect endpoint to run on, sc://host:port (default: SPARK_REMOTE; "
    "else the warm local engine, docs/ENGINE.md).")]


def register(app: typer.Typer) -> None:
    app.command("read")(read)
    app.command("sql")(sql)


def read(
    savepoint: Savepoint,
    uid: Optional[str] = typer.Option(None, "--uid", help="The operator's uid."),
    operator_id: Optional[str] = typer.Option(
        None, "--operator-id", help="The operator's id (32 hex digits), when its uid is unknown."),
    name: Optional[str] = typer.Option(
        None, "--name", help="The operator's name in the job, where it is unique (a Flink SQL "
        "operator's, e.g. 'GroupAggregate[40]'; `statectl info` lists them)."),
    state: Optional[list[str]] = typer.Option(
        None, "--state", help="A keyed state (repeatable: keyed table restricted to these "
        "states) or one operator state. Default: the keyed table, or the only operator state."),
    timers: bool = typer.Option(False, "--timers", help="Read the operator's timers."),
    key: Optional[list[str]] = typer.Option(
        None, "--key", help="Only this key (repeatable): a string key as is, a number or boolean "
        "as written, a tuple key as a JSON array, e.g. '[\"a\", 1]'. Reads only the key "
        "groups that can hold the keys."),
    fmt: Format = "table",
    output: Output = None,
    limit: Limit = None,
    where: Optional[str] = typer.Option(None, "--where", help="Keep rows matching a Spark SQL "
                                        "condition, e.g. \"count > 10\"."),
    overwrite: Overwrite = False,
    engine: str = typer.Option(
        "auto", "--engine", help="local: decode in this process, no Spark; spark; auto (default): local "
        "(batch by batch, any size) unless --where or --master asks for Spark."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Say which engine reads, and why (stderr)."),
    explode: bool = typer.Option(False, "--explode", help="One row per element of a list state (with "
                                 "`index`) or entry of a map state (with `map_key`); the state "
                                 "chosen with --state when the table has several."),
    master: Master = None,
    remote: Remote = None,
    checkpoint: Checkpoint = None,
    classes: Classes = None,
) -> None:
    """Read one operator's keyed table, timers, or an operator state."""
    from statectl.readers.local import choose_engine
    from statectl.statefmt.formats import load

    use_classes(classes)
    sp = load(opened(savepoint, checkpoint))
    check_frame_output(fmt, output, [sp], overwrite)
    op = _operator(sp, uid, operator_id, name)
    choice, flattened = _table_choice(sp, op, state, timers, key, explode)
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    chosen, why = choose_engine(sp, choice, engine, where, limit, master or remote)
    if verbose:
        print(f"engine: {chosen} ({why})", file=sys.stderr)
    if chosen == "local":
        _read_locally(sp, op, choice, flattened, fmt, output, limit, overwrite)
    else:
        _read_with_spark(sp, op, choice, flattened, where, (master, remote), fmt, output, limit, overwrite)
        if verbose:
            from .spark import ENGINE_NOTES

            print(f"spark: {'; '.join(ENGINE_NOTES) or 'classic'}", file=sys.stderr)


def _operator(sp, uid: str | None, operator_id: str | None, name: str | None):
    """The operator named by exactly one of ``--uid``, ``--operator-id`` and ``--name``."""
    from statectl.readers import find_operator
    from statectl.statefmt.ids import OperatorRef

    if sum(x is not None for x in (uid, operator_id, name)) != 1:
        raise UsageError("name the operator with exactly one of --uid, --operator-id or --name; "
                         f"operators: {sp.operator_labels()}")
    return find_operator(sp, OperatorRef(uid=uid, operator_id=operator_id, name=name))


def _table_choice(sp, op, state, timers: bool, key, explode: bool):
    """The table to read (restricted to ``--key``'s keys) and, with ``--explode``, the list or
    map state flattened into it (else None)."""
    from statectl.readers.resolve import choose_table

    choice = choose_table(op, state, timers)
    if key:
        choice = with_keys(sp, choice, key)
    if not explode:
        return choice, None
    import dataclasses

    from statectl.readers.explode import exploded_state

    flattened = exploded_state(choice)
    return dataclasses.replace(choice, states=(flattened.name,)), flattened


def _read_locally(sp, op, choice, flattened, fmt, output, limit, overwrite) -> None:
    """The table decoded in this process (the local engine), no Spark: each batch written as it
    is decoded (exploded first, with ``--explode``), so memory stays bounded at any size."""
    from statectl.readers.local import local_batches

    from .arrow_tables import write_batches

    schema, batches = local_batches(sp, choice, None if flattened else limit)
    if flattened is not None:
        import pyarrow as pa

        from statectl.readers.explode import explode_table

        schema = explode_table(schema.empty_table(), op, flattened).schema
        batches = (b for t in (explode_table(pa.Table.from_batches([x]), op, flattened) for x in batches)
                   for b in t.to_batches())
    write_batches(schema, batches, fmt, output, limit, overwrite)


def _read_with_spark(sp, op, choice, flattened, where, engines, fmt, output, limit, overwrite) -> None:
    from statectl.readers import SavepointReader
    from statectl.readers.local import table_files

    from .frames import write_frame

    master, remote = engines
    with spark_errors():
        spark = start_spark(master, read_bytes=sum(f.size for f in table_files(sp, choice)), connect=True,
                            remote=remote)
        with scan_progress(spark, f"reading {choice.description}"):
            df = SavepointReader(spark, sp).table(choice)
            if flattened is not None:
                from statectl.readers.explode import explode_frame

                df = explode_frame(df, op, flattened)
            if where:
                df = filtered(df, where)
            write_frame(df, fmt, output, limit, overwrite)


def sql(
    savepoint: Savepoint,
    query: str = typer.Argument(..., help="A Spark SQL query over the savepoint's views: "
                                "`<uid>` keyed table, `<uid>.timers`, `<uid>.<state>` "
                                "operator state, `catalogue` (quote dotted names in backticks)."),
    fmt: Format = "table",
    output: Output = None,
    limit: Limit = None,
    overwrite: Overwrite = False,
    master: Master = None,
    remote: Remote = None,
    checkpoint: Checkpoint = None,
    classes: Classes = None,
) -> None:
    """Run a Spark SQL query over every state of a savepoint."""
    from statectl.readers import SavepointReader
    from statectl.readers.statements import check_read_only
    from statectl.statefmt.formats import load

    from .frames import write_frame

    check_read_only(query)
    use_classes(classes)
    sp = load(opened(savepoint, checkpoint))
    check_frame_output(fmt, output, [sp], overwrite)
    with spark_errors():
        spark = start_spark(master, read_bytes=sum(f.size for _, f in sp.data_files()), connect=True,
                            remote=remote)
        with scan_progress(spark, "running the query"):
            write_frame(SavepointReader(spark, sp).sql(query), fmt, output, limit, overwrite)


def filtered(df, where: str):
    """*df* filtered by a SQL condition; a condition Spark cannot parse or resolve is a UsageError."""
    from statectl.readers.conditions import selected

    return selected(df, where)


def with_keys(sp, choice, texts: list[str]):
    """*choice* restricted to the keys given by ``--key``, checked (and hashed) before Spark starts."""
    import dataclasses

    from statectl.readers.keys import KeyFilter, parse_key
    from statectl.readers.resolve import OPERATOR_STATE
    from statectl.readers.sources import table_source

    if choice.kind == OPERATOR_STATE:
        raise UsageError("--key filters a keyed table or its timers, not an operator state")
    op = choice.operator
    keys = [parse_key(op, t) for t in texts]
    # hashed once, here (a key the hash cannot take fails before Spark starts); the read uses it
    return dataclasses.replace(choice, keys=KeyFilter.of(table_source(sp, op), keys))
