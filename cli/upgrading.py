"""`statectl check OLD --against NEW` and `statectl remap OLD OUT --against NEW`: a savepoint
of one job version mapped onto the next (docs/UPGRADES.md).

`check` exits as `diff` does: 0 when NEW restores all of OLD unchanged, 1 otherwise, 2 for an
error. `remap` is a writing command: its mistakes exit 1. Neither starts Spark.
"""

from __future__ import annotations

from typing import Optional

import typer

from statectl.statefmt.errors import UsageError

from .diffing import DIFFERENT, _exit_code_2
from .writing import OVERWRITE, SELF_CONTAINED, SUMMARY_JSON, summary

AGAINST = typer.Option(..., "--against", help="A savepoint or retained checkpoint of the NEW job (run "
                       "it briefly, with no input if you like, and take one): its operator ids, uids, "
                       "names and serializer snapshots describe it.")
MAP = typer.Option(None, "--map", help="OLD=NEW: restore the OLD operator's state into the NEW "
                   "operator (each by uid, operator id or name). Repeatable.")
DROP = typer.Option(None, "--drop", help="Leave this OLD operator's state out (uid, operator id or "
                    "name). Repeatable.")


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("remap")(remap)


def check(
    old: str = typer.Argument(..., metavar="OLD", help="The savepoint of the running job version."),
    against: str = AGAINST,
    map_: Optional[list[str]] = MAP,
    drop: Optional[list[str]] = DROP,
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
) -> None:
    """Will the NEW job restore OLD? Every operator restored, matched (and why) or lost; every state
    identical, migrated by Flink, convertible by statectl or incompatible."""
    from statectl.statefmt.flink.upgrade import check_upgrade

    from .snapshots import opened

    with _exit_code_2():
        result = check_upgrade(opened(old), opened(against), _pairs(map_), drop or ())
    if json_:
        from .output import print_json

        print_json(result.to_json())
    else:
        show_check(result)
    if not result.restores_unchanged:
        raise typer.Exit(DIFFERENT)


def remap(
    old: str = typer.Argument(..., metavar="OLD", help="The savepoint of the running job version "
                              "(never written to)."),
    output: str = typer.Argument(..., help="Where to write the savepoint for the NEW job."),
    against: str = AGAINST,
    map_: Optional[list[str]] = MAP,
    drop: Optional[list[str]] = DROP,
    self_contained: bool = SELF_CONTAINED,
    overwrite: bool = OVERWRITE,
    json_: bool = SUMMARY_JSON,
    initial: Optional[list[str]] = typer.Option(
        None, "--initial", metavar="OPERATOR:STATE:FIELD=VALUE",
        help="The initial value of a field NEW adds to a partly compatible state (an aggregate added to a "
             "SQL SELECT: COUNT 0; SUM, MIN, MAX null), as check names it; VALUE is JSON (0, null, 1.5, \"x\"). "
             "Repeatable."),
) -> None:
    """Write OLD's state with NEW's operator ids, uids and names, for the NEW job to restore
    without allowNonRestoredState; untouched state is shallow pointer copies, convertible states
    are rewritten with NEW's serializers."""
    from statectl.writers.flink.remap import remap_savepoint

    from .snapshots import opened

    report = remap_savepoint(opened(old), output, opened(against), _pairs(map_), drop or (),
                             self_contained=self_contained, overwrite=overwrite, initial=_initial(initial))
    summary(report, json_)


def _initial(values: list[str] | None) -> dict[str, object]:
    import json

    out = {}
    for pair in values or []:
        name, sep, value = pair.rpartition("=")
        if not sep or not name or not value:
            raise UsageError(f"--initial takes OPERATOR:STATE:FIELD=VALUE, got {pair!r}")
        try:
            out[name] = json.loads(value)
        except ValueError:
            out[name] = value  # a bare word: a string
    return out


def _pairs(values: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in values or []:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--map takes OLD=NEW, got {pair!r}")
        if old in out:
            raise UsageError(f"--map names OLD operator {old} twice")
        out[old] = new
    return out


def show_check(result) -> None:
    """The check as tables: OLD's operators, the states that are not identical, NEW's empty ones."""
    from .output import RichOutput, markup

    out = RichOutput()
    out.console.print(markup("[bold]OLD[/bold] {}\n[bold]NEW[/bold] {}", result.old, result.new))
    rows = [[op.old, op.status, op.new or ", ".join(op.candidates) or "-", op.how,
             op.level if op.status in ("restored", "matched") else "-", "; ".join(op.notes)]
            for op in result.operators]
    out.table("Operators of OLD with state", ["OLD operator", "status", "NEW operator", "matched by",
                                              "states", "notes"], rows)
    states = [[op.old, s.name, s.kind, s.level, "; ".join(s.reasons)]
              for op in result.operators for s in op.states if s.level != "identical"]
    if states:
        out.table("States that are not identical", ["OLD operator", "state", "kind", "verdict", "why"], states)
    for label in result.starting_empty:
        out.console.print(markup("[yellow]starts empty[/yellow]: NEW operator {} (nothing of OLD maps to it)",
                                 label))
    if result.stateless:
        out.console.print(f"{result.stateless} operator(s) of OLD hold no state (nothing to restore)")
    if result.restores_unchanged:
        out.console.print("[green]NEW restores OLD unchanged[/green]")
    else:
        out.console.print("[red]NEW does not restore OLD as it is[/red]: see statectl remap (docs/UPGRADES.md)")
