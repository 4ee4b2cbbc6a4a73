"""Every way statectl prints results. Commands build plain data and hand it here."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sys
import threading

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from statectl.statefmt.vocabulary import Format
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
    return Console(stderr=stderr, highlight=False, emoji=False,
                   width=None if probe.is_terminal else 200)


PLAIN_TABLE_ROWS = 200


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, C1, line/paragraph separators


def printable(text: str) -> str:
    """*text* with control characters (ESC, CR, newlines, U+2028...) shown as ``\\xNN``
    or ``\\uNNNN``: file content must not move the cursor, break a line or recolour
    the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def plain(text) -> Text:
    """*text* as rich text that is never parsed as markup, control characters shown."""
    return Text(printable(str(text)))


def markup(template: str, *values) -> Text:
    """*template* (rich markup, written here) with every ``{}`` filled by a :func:`plain` value.

    Values come from users and from savepoint files: a ``[`` or a trailing ``\\``
    in a path or an id must print as itself, so values are never parsed as markup.
    """
    pieces = template.split("{}")
    out = Text()
    for i, piece in enumerate(pieces):
        out.append_text(Text.from_markup(piece))
        if i < len(values):
            out.append_text(plain(values[i]))
    return out


class RichOutput:
    """Tables and short lines on the terminal."""

    def __init__(self) -> None:
        self.console = make_console()

    def savepoint_info(self, info: dict) -> None:
        c = self.console
        c.print(markup("[bold]Savepoint[/bold] {}", info["location"]))
        c.print(markup("  id {}, created {}, format version {}", info["savepoint_id"],
                       info["created_at"], info["format_version"]))
        c.print(markup("  {} operator(s), {} file(s), {}", len(info["operators"]), info["files"],
                       human_bytes(info["bytes"])))
        for entry in info["lineage"]:
            c.print(markup("  references savepoint {} at {}", entry["savepoint_id"], entry["location"]))
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
        if any(op["format"] == Format.FLINK for op in info["operators"]):
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
        unreadable = [[op["uid"] or op["operator_id"], u["part"], human_bytes(u["bytes"]), u["reason"]]
                      for op in info["operators"] for u in op.get("unreadable", ())]
        if unreadable:
            self.table("Unreadable (listed and validated, not read)", ["operator", "part", "size", "why"],
                       unreadable, right={2})
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
            table.add_row(*(plain(cell) for cell in row))
        self.console.print(table)

    def _plain_table(self, title, columns, rows, right) -> None:
        rows = [[printable(c) for c in r] for r in rows]
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
            c.print(markup("depends on savepoint {} at {}: " + state + ", {} file(s) referenced",
                           dep["savepoint_id"], dep["location"], dep["files"]))
        for note in report["notes"]:
            c.print(markup("note: {}", note), soft_wrap=True)
        for problem in report["problems"]:
            c.print(markup("[red]problem:[/red] {}", problem), soft_wrap=True)
        if report["valid"]:
            c.print(markup("[green]valid[/green]: {} ({} file(s), {} checked)", report["location"],
                           report["files_checked"], human_bytes(report["bytes_checked"])))
        else:
            c.print(markup("[red]invalid[/red]: {} ({} problem(s))", report["location"],
                           len(report["problems"])))

    def savepoint_diff(self, doc: dict) -> None:
        """A diff of two savepoints (see :func:`statectl.cli.summary.diff_summary`)."""
        c = self.console
        c.print(markup("[bold]A[/bold] {}\n[bold]B[/bold] {}", doc["a"], doc["b"]))
        ops = doc["operators"]
        for label in ops["removed"]:
            c.print(markup("[red]operator removed[/red]: {} (only in A)", label))
        for label in ops["added"]:
            c.print(markup("[green]operator added[/green]: {} (only in B)", label))
        for r in ops["renamed"]:
            c.print(markup("[yellow]operator renamed[/yellow]: {} -> {} ({})", r["a"], r["b"], r["why"]))
        if doc["changes"]:
            self.table("Declarations", ["operator", "change", "state", "A", "B"],
                       [[ch["operator"], ch["what"].replace("_", " "), ch["state"] or "",
                         _shown(ch["a"]), _shown(ch["b"])] for ch in doc["changes"]])
        if doc["tables"]:
            self.table("Content", ["operator", "table", "kind", "only in A", "only in B", "changed"],
                       [[t["operator"], t["table"], t["kind"], str(t["only_in_a"]),
                         str(t["only_in_b"]), str(t["changed"])] for t in doc["tables"]],
                       right={3, 4, 5})
        for t in doc["tables"]:
            rows = [[category.replace("_", " "), _compact(s["key"]), _compact(s.get("a")),
                     _compact(s.get("b"))]
                    for category, samples in t["samples"].items() for s in samples]
            if rows:
                self.table(f"Sample of {t['operator']} {t['table']}", ["", "key", "A", "B"], rows)
        if doc["identical"]:
            c.print("[green]identical[/green]")
        elif doc["same_content"]:
            c.print("[yellow]same content[/yellow], different parallelism or max parallelism")
        else:
            c.print("[red]different[/red]")

    def written(self, doc: dict) -> None:
        """The summary of a write (see :func:`statectl.cli.summary.write_summary`)."""
        c = self.console
        c.print(markup("[green]wrote[/green] savepoint {} to {}", doc["savepoint_id"], doc["location"]))
        table = Table(box=box.SIMPLE_HEAD)
        for col, justify in (("uid", "left"), ("operator id", "left"), ("", "left"),
                             ("states", "left"), ("files", "right"), ("rows", "right"),
                             ("size", "right")):
            table.add_column(col, justify=justify, no_wrap=col in ("uid", "operator id"))
        for o in doc["operators"]:
            table.add_row(plain(o["uid"]) if o["uid"] is not None else "(unknown)",
                          plain(o["operator_id"]), plain(o["action"]),
                          plain(", ".join(o["states"])), str(o["files"]),
                          "-" if o["rows"] is None else str(o["rows"]), human_bytes(o["bytes"]))
        c.print(table)
        for uid in doc["removed"]:
            c.print(markup("removed operator {}", uid))
        for e in doc["lineage"]:
            c.print(markup("shares files of savepoint {} at {}", e["savepoint_id"], e["location"]))
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

    def savepoint_diff(self, doc: dict) -> None:
        print_json(doc)


def _shown(value) -> str:
    return "-" if value is None else str(value)


def _compact(value) -> str:
    """A sample value as one line of JSON ("-" when that side has no row)."""
    if value is None:
        return "-"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def output_for(json_mode: bool):
    return JsonOutput() if json_mode else RichOutput()


@contextlib.contextmanager
def spinner(message: str, delay: float = 1.0):
    """A spinner with *message* on standard error, shown after *delay* seconds, on a terminal only.

    It writes to a duplicate of the terminal's descriptor, so it keeps turning
    while Spark's start-up has standard error pointed at /dev/null.
    """
    if not sys.stderr.isatty():
        yield
        return
    stream = os.fdopen(os.dup(sys.stderr.fileno()), "w")
    status = Console(file=stream, force_terminal=True, highlight=False, emoji=False).status(
        plain(message))
    done, shown = threading.Event(), threading.Event()

    def show() -> None:
        if not done.wait(delay):
            status.start()
            shown.set()

    waiter = threading.Thread(target=show, daemon=True)
    waiter.start()
    try:
        yield
    finally:
        done.set()
        waiter.join()
        if shown.is_set():
            status.stop()
        stream.close()


def print_error(message: str) -> None:
    """One line: messages quote paths and Spark errors, with [brackets] and newlines."""
    make_console(stderr=True).print(markup("[red]error:[/red] {}", message.strip()), soft_wrap=True)


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


def check_frame_output(fmt: str, output: str | None, involved=(), overwrite: bool = False) -> None:
    """Refuse impossible format/output combinations, and outputs that would overwrite
    something (a savepoint of *involved*, an existing file without *overwrite*),
    before any Spark work starts."""
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.savepoint import check_output

    if fmt not in FRAME_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; formats: {', '.join(FRAME_FORMATS)}")
    if fmt == "parquet" and not output:
        raise UsageError("--format parquet writes a directory: give it with --output PATH")
    if fmt == "table" and output:
        raise UsageError("--output needs --format jsonl, csv or parquet")
    if output:
        check_output(output, involved, overwrite=overwrite,
                     kind="directory" if fmt == "parquet" else "file")


def write_frame(df, fmt: str, output: str | None = None, limit: int | None = None,
                overwrite: bool = False) -> None:
    """Print or write a DataFrame as a table, JSON lines, CSV or Parquet.

    A file or directory output appears whole (written aside, then renamed in).
    """
    check_frame_output(fmt, output, overwrite=overwrite)
    if fmt == "table":
        _frame_table(df, limit)
        return
    if limit is not None:
        df = df.limit(limit)
    if fmt == "parquet":
        _frame_parquet(df, output, overwrite)
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


def _csv(rows):
    """Each row (the header first) as one CSV line; nulls as empty cells."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for values in rows:
        buf.seek(0)
        buf.truncate()
        writer.writerow(["" if v is None else v for v in values])
        yield buf.getvalue()


def _csv_lines(df):
    yield from _csv(itertools.chain([df.columns], _text_columns(df).toLocalIterator()))


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
    import os
    import uuid

    from statectl.statefmt.fs import Location

    loc = Location.of(output)
    target = Location(f"{loc.uri}.tmp-{uuid.uuid4().hex}") if loc.is_local else loc
    try:
        with target.open_output_stream() as out:
            for text in lines:
                out.write(text.encode("utf-8"))
        if target != loc:
            os.replace(target.path, loc.path)
    finally:
        if target != loc:
            target.delete_file()


@contextlib.contextmanager
def _directory_renamed_in(output: str):
    """The Location to write a directory output into: locally a folder aside, renamed in
    (over an old one) when the write succeeded, so a failed write leaves nothing."""
    import shutil
    import uuid

    from statectl.statefmt.fs import Location

    loc = Location.of(output)
    target = Location(f"{loc.uri}.tmp-{uuid.uuid4().hex}") if loc.is_local else loc
    try:
        yield target
        if target != loc:
            old = f"{loc.path}.old-{uuid.uuid4().hex}"
            if os.path.exists(loc.path):
                os.rename(loc.path, old)
            os.rename(target.path, loc.path)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if target != loc and os.path.exists(target.path):
            shutil.rmtree(target.path, ignore_errors=True)


def _frame_parquet(df, output: str, overwrite: bool = False) -> None:
    from statectl.readers.files import hadoop_uri, spark_can_open
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.fs import Location

    scheme = hadoop_uri(Location.of(output)).split("://", 1)[0]
    if not spark_can_open(df.sparkSession, scheme):
        raise UsageError(f"{output}: Spark writes Parquet to {scheme}:// through a Hadoop filesystem this "
                         "Spark does not have (for s3a: the hadoop-aws jars); write to a local path, or "
                         "read with --engine local, which writes Parquet through pyarrow")
    with _directory_renamed_in(output) as target:
        uri = target.uri if "://" in target.uri else "file://" + target.uri
        uri = uri.replace("s3://", "s3a://", 1) if uri.startswith("s3://") else uri
        df.write.mode("overwrite" if overwrite else "errorifexists").parquet(uri)


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
    console.print(_row_count_line(len(rows[:shown]), more))


def _row_count_line(shown: int, more: bool) -> str:
    if more:
        return f"[dim]first {shown} rows shown; --limit N shows more, --format jsonl|csv prints every row[/dim]"
    return f"[dim]{shown} row(s)[/dim]"


# --- Arrow tables (the local engine: no Spark) ------------------------------------------

def write_table(table, fmt: str, output: str | None = None, limit: int | None = None,
                overwrite: bool = False) -> None:
    """:func:`write_frame` for a pyarrow Table, in the same text forms: nested values as JSON,
    binary as base64, timestamps as ISO 8601."""
    check_frame_output(fmt, output, overwrite=overwrite)
    if limit is not None:
        table = table.slice(0, limit)
    if fmt == "table":
        _table_table(table, limit)
    elif fmt == "parquet":
        _table_parquet(table, output)
    elif fmt == "jsonl":
        fields = list(table.schema)
        _write_lines((json.dumps({f.name: _json_value(v, f.type) for f, v in zip(fields, row)},
                                 ensure_ascii=False, separators=(",", ":")) + "\n"
                      for row in _rows(table)), output)
    else:
        _write_lines(_table_csv_lines(table), output)


def _rows(table):
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return zip(*columns) if columns else iter(())


def _json_value(v, t):
    """A value of Arrow type *t* as Spark's to_json writes it: maps as objects (keys as text),
    binary as base64, timestamps as ISO 8601."""
    import base64
    import datetime
    import decimal

    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_map(t):
        return {_key_text(k, t.key_type): _json_value(x, t.item_type) for k, x in v}
    if pa.types.is_struct(t):
        return {f.name: _json_value(v[f.name], f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_json_value(x, t.value_type) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, datetime.datetime):
        text = v.strftime("%Y-%m-%dT%H:%M:%S.%f")
        if v.tzinfo is None:
            return text
        return text + ("Z" if v.utcoffset() == datetime.timedelta(0) else v.strftime("%z"))
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _key_text(k, t) -> str:
    if isinstance(k, str):
        return k
    value = _json_value(k, t)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if isinstance(value, (dict, list)) \
        else _text(value, None)


def _text(v, t) -> str | None:
    """A value as one cell of text (the terminal table, CSV)."""
    if v is None:
        return None
    if t is not None:
        v = _json_value(v, t)
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _table_csv_lines(table):
    types = [f.type for f in table.schema]
    rows = ([_text(v, t) for v, t in zip(row, types)] for row in _rows(table))
    yield from _csv(itertools.chain([table.column_names], rows))


def _table_parquet(table, output: str) -> None:
    """A directory holding one Parquet file, as Spark writes a small table."""
    import pyarrow.parquet as pq

    with _directory_renamed_in(output) as target:
        if target.is_local:
            os.makedirs(target.path, exist_ok=True)
        with target.child("part-00000.parquet").open_output_stream() as out:
            pq.write_table(table, out)


def _table_table(table, limit: int | None) -> None:
    from rich.text import Text

    shown = limit if limit is not None else TABLE_ROWS
    t = Table(box=box.SIMPLE_HEAD)
    for name in table.column_names:
        t.add_column(Text(name), overflow="fold")
    rows = list(_rows(table.slice(0, shown)))
    types = [f.type for f in table.schema]
    for row in rows:
        t.add_row(*(Text("null", style="dim") if v is None else Text(_text(v, ty)) for v, ty in zip(row, types)))
    console = make_console()
    console.print(t)
    more = table.num_rows > shown
    console.print(_row_count_line(len(rows), more))
