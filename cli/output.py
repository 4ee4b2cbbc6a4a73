"""How statectl prints: consoles, text that is never markup, the reports of `info`, `validate`,
`diff` and the write commands (rich or JSON), the spinner, the one error line. Commands build
plain data and hand it here. The rows of `read` and `sql`: results.py, frames.py (Spark),
arrow_tables.py (the local engine)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading

from typing import TYPE_CHECKING

from statectl.statefmt.types import type_str

if TYPE_CHECKING:  # rich is imported where it prints: `info --json` and a plain table need none of it
    from rich.console import Console
    from rich.text import Text


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
    from rich.console import Console

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
    from rich.text import Text

    return Text(printable(str(text)))


def markup(template: str, *values) -> Text:
    """*template* (rich markup, written here) with every ``{}`` filled by a :func:`plain` value.

    Values come from users and from savepoint files: a ``[`` or a trailing ``\\``
    in a path or an id must print as itself, so values are never parsed as markup.
    """
    from rich.text import Text

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
        from statectl.statefmt.formats import FORMATS

        if any(FORMATS[op["format"]].names_serializers for op in info["operators"]):
            self._serializer_info(info)
        elif states:
            self.table("States", ["operator", "state", "kind", "type", "key"], states)
        if info["shared_files"]:
            self.table("Files shared from other savepoints", ["operator", "file", "size"],
                       [[f["operator"], f["location"], human_bytes(f["bytes"])]
                        for f in info["shared_files"]])

    def _serializer_info(self, info: dict) -> None:
        """A savepoint whose states name their serializers (Flink's): its operators by name, and
        each state's serializer, TTL and size."""
        def key(op):
            if "keyed" not in op:
                return ""
            text = ", ".join(f"{k['name']}: {type_str(k['type'])}" for k in op["keyed"]["key"])
            ns = op["keyed"]["namespace_type"]
            return text + (f" / namespace: {type_str(ns)}" if ns is not None else "")

        self.table("Flink operators", ["uid", "operator id", "name", "keyed state", "key"],
                   [[op["uid"] or "(none)", op["operator_id"], op["name"] or "",
                     op.get("keyed", {}).get("layout", ""), key(op)]
                    for op in info["operators"]])
        rows = []
        for op in info["operators"]:
            label = op["uid"] if op["uid"] is not None else op["operator_id"]
            for s in op["states"]:
                kind = s["kind"] if s["scope"] == "keyed" else f"operator {s['kind']}"
                shown = s["type"] + (" (bytes: decodes with --classes)" if s.get("note") else "")
                rows.append([label, s["name"], kind, s["serializer"], shown,
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
        from rich import box
        from rich.table import Table

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
        from rich import box
        from rich.table import Table

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


    def pruned(self, doc: dict) -> None:
        """The summary of a prune (see :func:`statectl.cli.summary.prune_summary`)."""
        self.written(doc)
        rows = []
        for o in doc["pruned"]:
            label = o["uid"] if o["uid"] is not None else o["operator_id"]
            rows.append([label, "(keyed rows)", str(o["rows_removed"]), "", ""])
            rows += [[label, s["name"], str(s["entries_removed"]), "", ""] for s in o["states"]]
            rows.append([label, "(timers)", str(o["timers_removed"]), "", ""])
            rows.append([label, "(keyed files)", "", human_bytes(o["keyed_bytes_before"]),
                         human_bytes(o["keyed_bytes_after"])])
        self.table("Pruned", ["operator", "state", "removed", "bytes before", "bytes after"], rows,
                   right={2, 3, 4})


class JsonOutput:
    """One JSON document on standard output, for scripts."""

    def pruned(self, doc: dict) -> None:
        print_json(doc)

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
    from rich.console import Console

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
