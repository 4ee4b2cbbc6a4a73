"""Every way statectl prints results. Commands build plain data and hand it here."""

from __future__ import annotations

import json
import sys

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statectl.statefmt.model import FLINK
from statectl.statefmt.types import type_str


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def print_json(doc) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")


def make_console(stderr: bool = False) -> Console:
    """A console; when output goes to a file or pipe, wide enough not to fold tables."""
    probe = Console(stderr=stderr)
    return Console(stderr=stderr, highlight=False, width=None if probe.is_terminal else 200)


PLAIN_TABLE_ROWS = 200


class RichOutput:
    """Tables and short lines on the terminal."""

    def __init__(self) -> None:
        self.console = make_console()

    def savepoint_info(self, info: dict) -> None:
        c = self.console
        c.print(f"[bold]Savepoint[/bold] {info['location']}")
        c.print(f"  id {info['savepoint_id']}, created {info['created_at']}, "
                f"format version {info['format_version']}")
        c.print(f"  {len(info['operators'])} operator(s), {info['files']} file(s), "
                f"{human_bytes(info['bytes'])}")
        for entry in info["lineage"]:
            c.print(f"  references savepoint {entry['savepoint_id']} at {entry['location']}")
        ops = []
        for op in info["operators"]:
            ops.append([op["uid"] if op["uid"] is not None else "(unknown)", op["operator_id"],
                        str(op["parallelism"]), str(op["max_parallelism"]), str(len(op["states"])),
                        str(op["files"]), human_bytes(op["bytes"]),
                        f"{op['shared_files']} ({human_bytes(op['shared_bytes'])})"
                        if op["shared_files"] else "-"])
        self.table("Operators", ["uid", "operator id", "par", "maxpar", "states", "files", "size",
                                 "shared"], ops, right={2, 3, 4, 5, 6})
        states = []
        for op in info["operators"]:
            label = op["uid"] if op["uid"] is not None else op["operator_id"]
            key = ""
            if "keyed" in op:
                key = ", ".join(f"{k['name']}: {type_str(k['type'])}" for k in op["keyed"]["key"])
                if op["keyed"]["namespace_type"] is not None:
                    key += f" / namespace: {type_str(op['keyed']['namespace_type'])}"
            for s in op["states"]:
                kind = s["kind"] if s["scope"] == "keyed" else f"operator {s['kind']}"
                states.append([label, s["name"], kind, s["type"], key if s["scope"] == "keyed" else ""])
            if "keyed" in op and op["keyed"]["timers"]["files"]:
                states.append([label, "(timers)", "timers",
                               f"{op['keyed']['timers']['rows']} timer(s)", key])
        if any(op["format"] == FLINK for op in info["operators"]):
            self._flink_info(info)
        elif states:
            self.table("States", ["operator", "state", "kind", "type", "key"], states)
        if info["shared_files"]:
            self.table("Files shared from other savepoints", ["operator", "file", "size"],
                       [[f["operator"], f["location"], human_bytes(f["bytes"])]
                        for f in info["shared_files"]])

    def _flink_info(self, info: dict) -> None:
        """A Flink savepoint's operators by name, and each state's serializer, TTL and size."""
        def key(op):
            if "keyed" not in op:
                return ""
            text = ", ".join(f"{k['name']}: {type_str(k['type'])}" for k in op["keyed"]["key"])
            ns = op["keyed"]["namespace_type"]
            return text + (f" / namespace: {type_str(ns)}" if ns is not None else "")

        self.table("Flink operators", ["uid", "operator id", "name", "key"],
                   [[op["uid"] or "(none)", op["operator_id"], op["name"] or "", key(op)]
                    for op in info["operators"]])
        rows = []
        for op in info["operators"]:
            label = op["uid"] if op["uid"] is not None else op["operator_id"]
            for s in op["states"]:
                kind = s["kind"] if s["scope"] == "keyed" else f"operator {s['kind']}"
                rows.append([label, s["name"], kind, s["serializer"], s["type"],
                             "ttl" if s["ttl"] else "", human_bytes(s["bytes"])])
        if rows:
            self.table("States", ["operator", "state", "kind", "serializer", "type", "ttl", "size"],
                       rows, right={6})
        if info["absolute_files"]:
            self.table("Files referenced by absolute path", ["operator", "file", "size"],
                       [[f["operator"], f["path"], human_bytes(f["bytes"])] for f in info["absolute_files"]])

    def table(self, title: str, columns: list[str], rows: list[list[str]],
              right: set[int] = frozenset()) -> None:
        """A titled table: rich's on a few rows, plain aligned text on many (rich is slow there)."""
        if len(rows) > PLAIN_TABLE_ROWS:
            self._plain_table(title, columns, rows, right)
            return
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
        for i, col in enumerate(columns):
            table.add_column(col, justify="right" if i in right else "left",
                             no_wrap=i in (0, 1))
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        self.console.print(table)

    def _plain_table(self, title, columns, rows, right) -> None:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

        def line(cells):
            return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        out = [title, line(columns), "  ".join("-" * w for w in widths)]
        out.extend(line(r) for r in rows)
        self.console.file.write("\n".join(out) + "\n\n")

    def validation(self, report: dict) -> None:
        c = self.console
        for dep in report["dependencies"]:
            state = "present" if dep["present"] else "[red]GONE[/red]"
            c.print(f"depends on savepoint {dep['savepoint_id']} at {dep['location']}: {state}, "
                    f"{dep['files']} file(s) referenced")
        for note in report["notes"]:
            c.print(f"note: {escape(note)}", soft_wrap=True)
        for problem in report["problems"]:
            c.print(f"[red]problem:[/red] {problem}", soft_wrap=True)
        if report["valid"]:
            c.print(f"[green]valid[/green]: {report['location']} "
                    f"({report['files_checked']} file(s), {human_bytes(report['bytes_checked'])} checked)")
        else:
            c.print(f"[red]invalid[/red]: {report['location']} "
                    f"({len(report['problems'])} problem(s))")

    def written(self, doc: dict) -> None:
        """The summary of a write (see :func:`statectl.cli.summary.write_summary`)."""
        c = self.console
        c.print(f"[green]wrote[/green] savepoint {doc['savepoint_id']} to {escape(doc['location'])}")
        table = Table(box=box.SIMPLE_HEAD)
        for col, justify in (("uid", "left"), ("operator id", "left"), ("", "left"),
                             ("states", "left"), ("files", "right"), ("rows", "right"),
                             ("size", "right")):
            table.add_column(col, justify=justify, no_wrap=col in ("uid", "operator id"))
        for o in doc["operators"]:
            table.add_row(escape(o["uid"]) if o["uid"] is not None else "(unknown)", o["operator_id"],
                          o["action"], escape(", ".join(o["states"])), str(o["files"]),
                          str(o["rows"]), human_bytes(o["bytes"]))
        c.print(table)
        for uid in doc["removed"]:
            c.print(f"removed operator {escape(uid)}")
        for e in doc["lineage"]:
            c.print(f"shares files of savepoint {e['savepoint_id']} at {escape(e['location'])}")
        if doc["copied_files"]:
            c.print(f"copied {doc['copied_files']} file(s), {human_bytes(doc['copied_bytes'])}, "
                    "from other savepoints: self-contained")
        if doc["removed_leftover_files"]:
            c.print(f"removed {doc['removed_leftover_files']} file(s) left by an earlier write "
                    "that did not finish")


class JsonOutput:
    """One JSON document on standard output, for scripts."""

    def savepoint_info(self, info: dict) -> None:
        print_json(info)

    def validation(self, report: dict) -> None:
        print_json(report)

    def written(self, doc: dict) -> None:
        print_json(doc)


def output_for(json_mode: bool):
    return JsonOutput() if json_mode else RichOutput()


def print_error(message: str) -> None:
    from rich.markup import escape  # messages quote paths and Spark errors with [brackets]

    make_console(stderr=True).print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)


# --- DataFrames: `statectl read` and `statectl sql` --------------------------
# Spark turns values into text inside its executors (to_json, casts); the
# driver only streams the finished lines or a bounded number of table rows.

FRAME_FORMATS = ("table", "jsonl", "csv", "parquet")
TABLE_ROWS = 100
_JSON_OPTIONS = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}


def check_frame_output(fmt: str, output: str | None) -> None:
    """Refuse impossible format/output combinations before any Spark work starts."""
    from statectl.statefmt.errors import UsageError

    if fmt not in FRAME_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; formats: {', '.join(FRAME_FORMATS)}")
    if fmt == "parquet" and not output:
        raise UsageError("--format parquet writes a directory: give it with --output PATH")
    if fmt == "table" and output:
        raise UsageError("--output needs --format jsonl, csv or parquet")


def write_frame(df, fmt: str, output: str | None = None, limit: int | None = None) -> None:
    """Print or write a DataFrame as a table, JSON lines, CSV or Parquet."""
    check_frame_output(fmt, output)
    if fmt == "table":
        _frame_table(df, limit)
        return
    if limit is not None:
        df = df.limit(limit)
    if fmt == "parquet":
        _frame_parquet(df, output)
    elif fmt == "jsonl":
        _write_lines(_json_lines(df), output)
    else:
        _write_lines(_csv_lines(df), output)


def _positional(df):
    """*df* with columns renamed ``_c0``... so duplicate or odd names select safely."""
    return df.toDF(*[f"_c{i}" for i in range(len(df.columns))])


def _text_columns(df):
    """Each column as display text: nested values as JSON, binary as base64, timestamps
    as ISO 8601 (as in JSON lines), null kept."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out = []
    for i, field in enumerate(df.schema.fields):
        c = F.col(f"_c{i}")
        t = field.dataType
        if isinstance(t, (T.ArrayType, T.MapType, T.StructType)):
            c = F.to_json(c, _JSON_OPTIONS)
        elif isinstance(t, T.BinaryType):
            c = F.base64(c)
        elif isinstance(t, T.TimestampType):
            c = F.date_format(c, _JSON_OPTIONS["timestampFormat"])
        elif isinstance(t, T.TimestampNTZType):
            c = F.date_format(c, _JSON_OPTIONS["timestampNTZFormat"])
        elif not isinstance(t, T.StringType):
            c = c.cast("string")
        out.append(c.alias(f"_c{i}"))
    return _positional(df).select(*out)


def _json_lines(df):
    from pyspark.sql import functions as F

    names = df.columns
    fields = [F.col(f"_c{i}").alias(name) for i, name in enumerate(names)]
    lines = _positional(df).select(F.to_json(F.struct(*fields), _JSON_OPTIONS))
    for row in lines.toLocalIterator():
        yield row[0] + "\n"


def _csv_lines(df):
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")

    def line(values) -> str:
        buf.seek(0)
        buf.truncate()
        writer.writerow(values)
        return buf.getvalue()

    yield line(df.columns)
    for row in _text_columns(df).toLocalIterator():
        yield line(["" if v is None else v for v in row])


def _write_lines(lines, output: str | None) -> None:
    if output is None:
        try:
            for text in lines:
                sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. `| head`: the reader has what it wanted
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    from statectl.statefmt.fs import Location

    with Location.of(output).open_output_stream() as out:
        for text in lines:
            out.write(text.encode("utf-8"))


def _frame_parquet(df, output: str) -> None:
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.fs import Location

    loc = Location.of(output)
    if loc.exists():
        raise UsageError(f"{loc} already exists; choose a new --output")
    uri = loc.uri if "://" in loc.uri else "file://" + loc.uri
    df.write.parquet(uri.replace("s3://", "s3a://", 1) if uri.startswith("s3://") else uri)


def _frame_table(df, limit: int | None) -> None:
    from rich.text import Text

    shown = limit if limit is not None else TABLE_ROWS
    probe = shown if limit is not None else shown + 1  # one more row tells whether rows were left out
    rows = _text_columns(df).limit(probe).collect() if probe else []
    more = len(rows) > shown
    table = Table(box=box.SIMPLE_HEAD)
    for name in df.columns:
        table.add_column(Text(name), overflow="fold")
    for row in rows[:shown]:
        table.add_row(*(Text("null", style="dim") if v is None else Text(v) for v in row))
    console = make_console()
    console.print(table)
    if more:
        console.print(f"[dim]first {shown} rows shown; --limit N shows more, "
                      "--format jsonl|csv prints every row[/dim]")
    else:
        console.print(f"[dim]{len(rows)} row(s)[/dim]")
