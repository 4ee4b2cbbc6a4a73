"""`statectl bootstrap` and `statectl modify`: write new savepoints, derive modified ones.

The spec, the base and the output are checked before Spark starts, so most
mistakes fail at once and without a JVM. `modify` never starts Spark.
"""

from __future__ import annotations

import contextlib
from typing import Optional

import typer

from statectl.statefmt.errors import UsageError

from .classes import Classes, use_classes
from .spark import MASTER_HELP as _MASTER_HELP
from .spark import spark_errors, start_spark
from .output import output_for

OVERWRITE_HELP = ("Replace a savepoint (or non-empty directory) already at the output; the old "
                  "savepoint stays valid until the new _metadata replaces it, then its files go.")
SELF_CONTAINED_HELP = ("Copy every file shared from another savepoint into the output, "
                        "so it no longer depends on any other savepoint.")

# the options every writing command takes (bootstrap, modify, rescale)
SELF_CONTAINED = typer.Option(False, "--self-contained", help=SELF_CONTAINED_HELP)
OVERWRITE = typer.Option(False, "--overwrite", help=OVERWRITE_HELP)
MASTER = typer.Option(None, "--master", help=_MASTER_HELP)
SUMMARY_JSON = typer.Option(False, "--json", help="Print the summary as one JSON object.")
# the keyed state of a Flink output: native RocksDB snapshots or canonical streams (bootstrap, rescale)
NATIVE = typer.Option(None, "--native/--canonical", help="Write the Flink keyed state as native RocksDB "
                      "snapshots (which Flink's RocksDB and ForSt backends restore as their own) or as "
                      "canonical streams (any backend). Default: as the base operator holds it, canonical "
                      "for a new one.", show_default=False)


def layout_of(native: bool | None) -> str | None:
    """The --native/--canonical choice as a writer's layout (None: the base's)."""
    return None if native is None else "native" if native else "canonical"


def register(app: typer.Typer) -> None:
    app.command("bootstrap")(bootstrap)
    app.command("modify")(modify)


def bootstrap(
    output: str = typer.Argument(..., help="Where to write the new savepoint (must not hold one)."),
    spec: str = typer.Option(..., "--spec", help="The bootstrap spec (YAML or JSON); "
                             "see docs/BOOTSTRAP.md."),
    base: Optional[str] = typer.Option(None, "--base", help="Derive from this savepoint (statectl's "
                                       "or, with --format flink, Flink's): the spec's operators are "
                                       "added or replace the base's, all others are shallow copies of "
                                       "it; inputs {sql: ...} query its tables."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Physical format: canonical "
                                      "(default, or the spec's format), rocksdb, or flink (an "
                                      "Apache Flink savepoint, canonical unless --native; docs/FLINK.md)."),
    self_contained: bool = SELF_CONTAINED,
    overwrite: bool = OVERWRITE,
    master: Optional[str] = MASTER,
    json_: bool = SUMMARY_JSON,
    classes: Classes = None,
    native: Optional[bool] = NATIVE,
) -> None:
    """Write a savepoint from data files (Parquet, CSV, JSON lines) described by a spec."""
    from statectl.statefmt.formats import load
    from statectl.writers import SavepointWriter
    from statectl.writers.spec import load_spec

    use_classes(classes)  # a fix of a Flink base's Kryo state reads and writes it with these layouts
    parsed = load_spec(spec)
    physical = fmt or parsed.format
    _check_format(physical)
    base_sp = load(base) if base is not None else None
    parsed.check_base(base_sp)
    writer = SavepointWriter(base_sp, parsed.max_parallelism, physical, layout_of(native))
    writer.check(output, overwrite, [op.ref for op in parsed.operators])  # before Spark starts
    with spark_errors():
        spark = start_spark(master, connect=True)
        with progress(spark, quiet=json_) as on_job:
            for op in parsed.operator_data(spark, base_sp):
                writer.with_operator(op)
            report = writer.write(output, spark, self_contained, on_job=on_job,
                                  overwrite=overwrite)
    summary(report, json_)


def modify(
    base: str = typer.Argument(..., help="The savepoint to derive from (never written to)."),
    output: str = typer.Argument(..., help="Where to write the derived savepoint."),
    remove: Optional[list[str]] = typer.Option(None, "--remove", help="Drop this operator "
                                               "(uid, or operator id). Repeatable."),
    rename: Optional[list[str]] = typer.Option(None, "--rename", help="OLD=NEW: give an operator "
                                               "a new uid. Repeatable."),
    remove_id: Optional[list[str]] = typer.Option(
        None, "--remove-operator-id", help="Drop the operator with this operator id (32 hex digits): "
        "one of a Flink 1.x savepoint or a SQL job, which have no uid. Repeatable."),
    rename_id: Optional[list[str]] = typer.Option(
        None, "--rename-operator-id", help="ID=NEW: give the operator with this operator id the uid NEW "
        "(and so NEW's operator id), for a job that now sets that uid. Repeatable."),
    self_contained: bool = SELF_CONTAINED,
    overwrite: bool = OVERWRITE,
    json_: bool = SUMMARY_JSON,
) -> None:
    """Derive a savepoint by metadata alone: remove or rename operators, or copy it whole."""
    from statectl.statefmt.ids import OperatorRef
    from statectl.writers import SavepointWriter

    writer = SavepointWriter.from_existing(base)
    writer.check(output, overwrite)
    removed = [*(remove or []), *(OperatorRef(operator_id=i) for i in remove_id or [])]
    renamed = [*_pairs("--rename", rename, str), *_pairs("--rename-operator-id", rename_id,
                                                           lambda i: OperatorRef(operator_id=i))]
    for operator in removed:
        writer.remove_operator(operator)
    for operator, new in renamed:
        writer.rename_operator(operator, new)
    summary(writer.write(output, None, self_contained, overwrite=overwrite), json_)


def _pairs(option: str, values: list[str] | None, operator) -> list[tuple]:
    """Each OLD=NEW of *option* as (the operator OLD names, NEW)."""
    out = []
    for pair in values or []:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"{option} takes {'ID' if option.endswith('-id') else 'OLD'}=NEW, got {pair!r}")
        out.append((operator(old), new))
    return out


def _check_format(physical: str) -> None:
    from statectl.statefmt.vocabulary import Format

    if physical not in Format.own():
        raise UsageError(f"unknown format {physical!r}; known: {', '.join(Format.own())}")


# --- Spark ------------------------------------------------------------------------------------

@contextlib.contextmanager
def progress(spark, quiet: bool):
    """A progress bar on stderr fed by the Spark jobs; yields the writer's on_job callback."""
    from .progress import progress_bars, watching

    if quiet:
        yield None
        return
    bars = progress_bars()
    ids: dict[str, int] = {}

    def show(job) -> None:
        if job.description not in ids:
            ids[job.description] = bars.add_task(job.description, total=None)
        bars.update(ids[job.description], completed=job.done, total=job.total or None)

    with bars:
        try:
            with watching(spark, show) as watcher:
                yield watcher.job_started
        except BaseException:
            bars.live.transient = True  # a failed write shows its error alone
            for task in bars.task_ids:
                bars.update(task, visible=False)
            if not bars.console.is_terminal:  # else rich ends the hidden bars with an empty line
                bars.console.quiet = True
            raise


def summary(report, json_mode: bool) -> None:
    from .summary import write_summary

    output_for(json_mode).written(write_summary(report))
