"""`statectl prune`: a savepoint without its expired TTL entries, or without the keyed rows a
condition selects (docs/PRUNE.md)."""

from __future__ import annotations

from typing import Optional

import typer

from .output import output_for
from .spark import spark_errors, start_spark
from .writing import MASTER, OVERWRITE, SELF_CONTAINED, SUMMARY_JSON, progress


def register(app: typer.Typer) -> None:
    app.command("prune")(prune)


def prune(
    savepoint: str = typer.Argument(..., help="The savepoint to prune (never written to)."),
    output: str = typer.Argument(..., help="Where to write the pruned savepoint."),
    expired_at: Optional[str] = typer.Option(
        None, "--expired-at", help="Remove the TTL entries expired at this time (epoch milliseconds or ISO 8601, "
        "UTC unless it names an offset), by Flink's rule: last access + TTL <= TIME."),
    ttl: Optional[list[str]] = typer.Option(
        None, "--ttl", help="With --expired-at: the time to live of every TTL state (7d, 12h, 30min, P7D...) "
        "or STATE=DURATION for one state; a savepoint does not record it. Repeatable."),
    where: Optional[str] = typer.Option(
        None, "--where", help="Remove the rows of the keyed table (key, namespace) this Spark SQL condition "
        "selects, every state and timer of theirs."),
    uid: Optional[list[str]] = typer.Option(None, "--uid", help="Prune only this keyed operator (uid or "
                                            "operator id). Repeatable; default: every keyed operator "
                                            "(with --expired-at, every one with a TTL state)."),
    operator_id: Optional[list[str]] = typer.Option(
        None, "--operator-id", help="Prune only this keyed operator, named by its operator id (32 hex digits). "
        "Repeatable, with --uid too."),
    self_contained: bool = SELF_CONTAINED,
    overwrite: bool = OVERWRITE,
    master: Optional[str] = MASTER,
    json_: bool = SUMMARY_JSON,
) -> None:
    """Write a savepoint without its TTL entries expired at a time, or without the keyed rows a
    condition selects; every other value, TTL timestamp and timer is kept as it is.

    Other operators are shallow copies. A Flink savepoint's pruned operators are written as a
    canonical Flink savepoint (docs/PRUNE.md).
    """
    from statectl.statefmt.ids import OperatorRef
    from statectl.writers.prune import Prune

    chosen = [*(uid or []), *(OperatorRef(operator_id=i) for i in operator_id or [])]
    plan = Prune.of(savepoint, chosen, expired_at, ttl or None, where)  # fails before Spark starts
    plan.check(output, overwrite)
    with spark_errors():
        spark = start_spark(master, connect=True)
        with progress(spark, quiet=json_) as on_job:
            report = plan.write(spark, output, self_contained, on_job=on_job, overwrite=overwrite)
    from .summary import prune_summary

    output_for(json_).pruned(prune_summary(report))
