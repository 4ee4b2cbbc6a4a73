"""`statectl rescale`: keyed state for a new max parallelism and/or parallelism."""

from __future__ import annotations

from typing import Optional

import typer

from .spark import spark_errors, start_spark
from .writing import MASTER, NATIVE, OVERWRITE, SELF_CONTAINED, SUMMARY_JSON, layout_of, progress, summary


def register(app: typer.Typer) -> None:
    app.command("rescale")(rescale)


def rescale(
    savepoint: str = typer.Argument(..., help="The savepoint to rescale (never written to)."),
    output: str = typer.Argument(..., help="Where to write the rescaled savepoint."),
    max_parallelism: int = typer.Option(..., "--max-parallelism", help="The new max parallelism "
                                        "(number of key groups), 1 to 32768."),
    parallelism: Optional[int] = typer.Option(None, "--parallelism", help="The new parallelism, "
                                              "1 to the max parallelism (default: unchanged)."),
    uid: Optional[list[str]] = typer.Option(None, "--uid", help="Rescale only this keyed "
                                            "operator (uid or operator id). Repeatable; "
                                            "default: every keyed operator."),
    operator_id: Optional[list[str]] = typer.Option(
        None, "--operator-id", help="Rescale only this keyed operator, named by its operator id (32 hex "
        "digits): one of a Flink 1.x savepoint or a SQL job, which have no uid. Repeatable, with --uid too."),
    self_contained: bool = SELF_CONTAINED,
    overwrite: bool = OVERWRITE,
    master: Optional[str] = MASTER,
    json_: bool = SUMMARY_JSON,
    native: Optional[bool] = NATIVE,
) -> None:
    """Move every key's state and timers to the key groups and subtasks of a new max parallelism.

    A new parallelism alone keeps the keyed files (they are indexed by key group);
    operator list and union state are dealt out again. Other operators are shallow copies.
    A Flink savepoint stays a Flink savepoint, keys placed by Flink's hash; a native RocksDB or
    ForSt operator is written native again (--canonical writes canonical streams instead).
    """
    from statectl.statefmt.formats import load
    from statectl.statefmt.ids import OperatorRef
    from statectl.writers.rescale import Rescale

    chosen_ops = [*(uid or []), *(OperatorRef(operator_id=i) for i in operator_id or [])]
    source = load(savepoint)
    chosen = Rescale.of(source, max_parallelism, parallelism, chosen_ops, layout_of(native))  # fails before Spark starts
    chosen.check(output, overwrite)
    with spark_errors():
        spark = start_spark(master, connect=True)
        with progress(spark, quiet=json_) as on_job:
            report = chosen.write(spark, output, self_contained, on_job=on_job, overwrite=overwrite)
    summary(report, json_)
