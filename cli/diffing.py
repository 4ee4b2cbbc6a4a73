"""`statectl diff A B`: what differs between two savepoints. Exit 0 identical, 1 different, 2 error.

Like diff(1), errors exit 2 here (the other commands use 1), so a script can
tell "different" from "could not compare".
"""

from __future__ import annotations

import contextlib
from typing import Optional

import typer

from statectl.statefmt.errors import Interrupted, StatectlError

from .spark import MASTER_HELP, spark_errors, start_spark

DIFFERENT = 1
TROUBLE = 2


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)


def diff(
    a: str = typer.Argument(..., metavar="A", help="The first savepoint (a path or URI)."),
    b: str = typer.Argument(..., metavar="B", help="The second savepoint (a path or URI)."),
    limit: int = typer.Option(5, "--limit", min=0, help="Sample rows shown per table and category."),
    content_only: bool = typer.Option(False, "--content-only", help="Ignore parallelism and max "
                                      "parallelism changes: exit 0 when only the layout differs "
                                      "(e.g. to check a rescale)."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
    engine: str = typer.Option("auto", "--engine", help="auto: small tables found identical are "
                               "confirmed in this process, Spark compares the others (and starts only "
                               "then); spark: Spark compares every table (the default with --master)."),
    master: Optional[str] = typer.Option(None, "--master", help=MASTER_HELP),
) -> None:
    """Compare two savepoints: operators, parallelism, states, then every table key by key."""
    from statectl.readers.diff import diff_savepoints
    from statectl.statefmt.formats import load

    from .snapshots import opened
    from .output import output_for
    from .summary import diff_summary

    with _exit_code_2():
        sp_a, sp_b = load(opened(a)), load(opened(b))  # bad paths fail before Spark starts
        with spark_errors():
            read = sum(f.size for sp in (sp_a, sp_b) for _, f in sp.data_files())  # a read: see cli.jvm
            result = diff_savepoints(lambda: start_spark(master, read_bytes=read, connect=True), sp_a, sp_b,
                                     limit=limit, engine="spark" if master is not None else engine)
    output_for(json_).savepoint_diff(diff_summary(result))
    if not (result.same_content if content_only else result.identical):
        raise typer.Exit(DIFFERENT)


@contextlib.contextmanager
def _exit_code_2():
    """statectl's errors leave with exit code 2 (printed once, by the CLI's entry point)."""
    try:
        yield
    except StatectlError as e:
        if not isinstance(e, Interrupted):
            e.exit_code = TROUBLE
        raise
