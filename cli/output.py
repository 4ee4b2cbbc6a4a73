"""Every way statectl prints results. Commands build plain data and hand it here."""

from __future__ import annotations

import json
import sys

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statefmt.types import type_str


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
        if states:
            self.table("States", ["operator", "state", "kind", "type", "key"], states)
        if info["shared_files"]:
            self.table("Files shared from other savepoints", ["operator", "file", "size"],
                       [[f["operator"], f["location"], human_bytes(f["bytes"])]
                        for f in info["shared_files"]])

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
        for problem in report["problems"]:
            c.print(f"[red]problem:[/red] {problem}", soft_wrap=True)
        if report["valid"]:
            c.print(f"[green]valid[/green]: {report['location']} "
                    f"({report['files_checked']} file(s), {human_bytes(report['bytes_checked'])} checked)")
        else:
            c.print(f"[red]invalid[/red]: {report['location']} "
                    f"({len(report['problems'])} problem(s))")


class JsonOutput:
    """One JSON document on standard output, for scripts."""

    def savepoint_info(self, info: dict) -> None:
        print_json(info)

    def validation(self, report: dict) -> None:
        print_json(report)


def output_for(json_mode: bool):
    return JsonOutput() if json_mode else RichOutput()


def print_error(message: str) -> None:
    make_console(stderr=True).print(f"[red]error:[/red] {message}", soft_wrap=True)
