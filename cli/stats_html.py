"""`statectl stats --html FILE`: the charts of `cli.stats_charts` as one self-contained HTML
file: inline CSS and SVG bars, no script, font or image fetched from anywhere."""

from __future__ import annotations

from html import escape

from statectl.readers.stats import SavepointStats

from .output import printable
from .stats_charts import Chart, sections

BAR_PX = 320  # the longest bar's width
ROW_PX = 18

STYLE = """body{font:14px/1.4 sans-serif;margin:2em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em;border-bottom:1px solid #ccc}
h3{font-size:.95em;margin:1.2em 0 .3em}p{margin:.2em 0}
table{border-collapse:collapse}td{padding:0 .6em 0 0;white-space:nowrap;font-size:.9em}
td.label{max-width:22em;overflow:hidden;text-overflow:ellipsis}svg{display:block}
rect{fill:#4682b4}"""


def render(stats: SavepointStats) -> str:
    """The whole report as HTML text."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>statectl stats: {text(stats.location)}</title>", f"<style>{STYLE}</style></head><body>"]
    for i, section in enumerate(sections(stats)):
        parts.append(f"<h{1 if i == 0 else 2}>{text(section.heading)}</h{1 if i == 0 else 2}>")
        parts += [f"<p>{text(note)}</p>" for note in section.notes]
        parts += [chart_html(chart) for chart in section.charts]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def text(value: str) -> str:
    """*value* as HTML text: escaped, control characters shown as ``\\xNN``."""
    return escape(printable(value))


def chart_html(chart: Chart) -> str:
    """A chart: a table of label, an inline SVG bar and the figure, one row per bar."""
    top = max((b.value for b in chart.bars), default=0)
    rows = []
    for b in chart.bars:
        width = 0 if top <= 0 else max(round(b.value * BAR_PX / top), 1 if b.value > 0 else 0)
        svg = (f'<svg width="{BAR_PX}" height="{ROW_PX - 4}" role="img" aria-label="{text(b.text)}">'
               f'<rect x="0" y="0" width="{width}" height="{ROW_PX - 4}"/></svg>')
        rows.append(f'<tr><td class="label" title="{text(b.label)}">{text(b.label)}</td>'
                    f"<td>{svg}</td><td>{text(b.text)}</td></tr>")
    return f"<h3>{text(chart.title)}</h3>\n<table>\n" + "\n".join(rows) + "\n</table>"


def check_report_path(path: str) -> None:
    """Refuse, before any work, a report path whose folder does not exist or that is a folder."""
    import os

    from statectl.statefmt.errors import UsageError

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        what = "is a folder" if os.path.isdir(path) else f"its folder {folder} does not exist"
        raise UsageError(f"--html {path}: cannot write the report: {what}")


def write_report(stats: SavepointStats, path: str) -> None:
    """The report written to *path* (a local file), replacing one there."""
    from statectl.statefmt.errors import UsageError

    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(render(stats))
    except OSError as e:
        raise UsageError(f"--html {path}: cannot write the report: {e.strerror or e}") from None
