"""`statectl stats`: where a savepoint's bytes are, as terminal charts (80 columns), one JSON
object (`docs/STATS.md`) or a self-contained HTML report. No Spark: every split is decoded in
this process (`readers.stats`)."""

from __future__ import annotations

from typing import Optional

import typer

from .listing import Checkpoint

WIDTH = 80  # the charts fit a terminal this wide
LABEL, BAR = 24, 18  # columns of a bar's label and of the bar itself
EIGHTHS = " ▏▎▍▌▋▊▉"


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)


def stats(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI), or a folder of "
                                    "snapshots (the newest is measured)."),
    uid: Optional[list[str]] = typer.Option(None, "--uid", metavar="UID", help="Only this operator (uid or "
                                            "operator id). Repeatable; default: every operator."),
    now: Optional[str] = typer.Option(None, "--now", metavar="TIME", help="When TTL entries are judged "
                                      "expired: epoch milliseconds or ISO 8601 (default: now)."),
    ttl: Optional[list[str]] = typer.Option(None, "--ttl", metavar="[STATE=]DURATION", help="The time to "
                                            "live of every TTL state, or of one (a savepoint does not "
                                            "record it): 7d, 12h, 30min, 500ms, P7D. Repeatable."),
    parallelism: Optional[int] = typer.Option(None, "--parallelism", metavar="N", help="Also show each "
                                              "keyed operator's bytes per subtask after a rescale to N."),
    top: int = typer.Option(5, "--top", metavar="K", help="How many largest keys to show per state."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of charts."),
    html: Optional[str] = typer.Option(None, "--html", metavar="FILE", help="Also write the charts as one "
                                       "self-contained HTML file (no network needed to view it)."),
    checkpoint: Checkpoint = None,
) -> None:
    """Show where a savepoint's bytes are: per operator, state, subtask and key group, the
    largest keys, TTL entries expired, timers by time, and skew now and after a rescale."""
    from statectl.readers.stats import savepoint_stats
    from statectl.statefmt.expiry import parse_time, parse_ttls
    from statectl.statefmt.formats import load

    from .info import _no_cycle_collection
    from .output import print_json
    from .snapshots import opened

    if html is not None:
        from .stats_html import check_report_path

        check_report_path(html)
    moment = None if now is None else parse_time(now, "--now")
    ttls = parse_ttls(ttl or [], "--ttl")
    with _no_cycle_collection():
        found = savepoint_stats(load(opened(savepoint, checkpoint)), uid, now=moment, ttls=ttls,
                                parallelism=parallelism, top=top)
    if html is not None:
        from .stats_html import write_report

        write_report(found, html)
    if json_:
        print_json(found.to_json())
    else:
        show(found)


def show(found) -> None:
    """The charts on the terminal, every line at most :data:`WIDTH` columns."""
    from rich.console import Console
    from rich.text import Text

    from .output import printable
    from .stats_charts import sections

    console = Console(highlight=False, emoji=False, width=WIDTH)
    for section in sections(found):
        console.print(Text(printable(section.heading), style="bold"), overflow="fold")
        for note in section.notes:
            console.print(Text("  " + printable(note)), overflow="fold")
        for chart in section.charts:
            console.print(Text("  " + printable(chart.title), style="underline"), overflow="fold")
            top = max((b.value for b in chart.bars), default=0)
            for b in chart.bars:
                line = Text("    " + fit(printable(b.label), LABEL) + " ")
                line.append(bar(b.value, top, BAR), style="cyan")
                line.append(" " + fit(printable(b.text), WIDTH - 4 - LABEL - 2 - BAR).rstrip())
                console.print(line, overflow="crop", no_wrap=True)
        console.print()


def bar(value: int, top: int, width: int) -> str:
    """A bar of *value* against *top* in *width* columns (eighths of a column)."""
    eighths = 0 if top <= 0 else round(value * width * 8 / top)
    if value > 0 and eighths == 0:
        eighths = 1  # anything shows
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width)


def fit(text: str, width: int) -> str:
    """*text* in exactly *width* terminal columns (wide characters count two): padded, or cut
    with an ellipsis marking the cut."""
    from rich.cells import cell_len, set_cell_size

    return set_cell_size(text, width) if cell_len(text) <= width else set_cell_size(text, width - 1) + "…"
