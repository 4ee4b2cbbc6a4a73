"""The explorer's screens: operators → states → a table a page at a time → one value; the
sizes of an operator's states and key groups; help. Every read error is shown (a
notification and the status line) and leaves the screen as it was."""

from __future__ import annotations

import pyarrow.compute as pc
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Markdown, Static

from statectl.statefmt.errors import StatectlError
from statectl.readers.resolve import TIMERS
from statectl.statefmt.model import KEYED_PART, Operator

from ..output import human_bytes, printable
from .browse import OPERATOR_COLUMNS, StateEntry, TableView, operator_rows, state_entries, unreadable_text
from .values import row_json, row_tree, time_columns
from .widgets import Prompt, RowsTable, value_tree


class Page(Screen):
    """A screen of a title line, a table and a status line."""

    BINDINGS = [Binding("escape", "back", "Back"), Binding("question_mark", "app.help", "Help", key_display="?")]

    def __init__(self, title: str):
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(Text(printable(self.title_text), style="bold", no_wrap=True, overflow="ellipsis"), id="title")
        yield from self.body()
        yield Static("", id="status")
        yield Footer()

    def body(self) -> ComposeResult:
        yield RowsTable(id="rows")

    @property
    def table(self) -> RowsTable:
        return self.query_one("#rows", RowsTable)

    def status(self, text: str) -> None:
        self.query_one("#status", Static).update(Text(printable(text)))

    def failed(self, error: Exception) -> None:
        self.status(f"unreadable: {error}")
        self.app.notify(printable(str(error)), title="cannot read", severity="error", timeout=8)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


class OperatorsScreen(Page):
    BINDINGS = [Binding("enter", "open", "States", show=True), Binding("q", "app.quit", "Quit")]

    def on_mount(self) -> None:
        sp = self.app.savepoint
        self.table.show_rows(OPERATOR_COLUMNS, operator_rows(sp))
        self.status(f"{len(sp.operators)} operator(s); Enter opens one")
        self.run_worker(lambda: warm_up(sp), thread=True, exit_on_error=False)

    def action_open(self) -> None:
        if self.table.row_count:
            self.app.push_screen(StatesScreen(self.app.savepoint.operators[self.table.cursor_row]))

    def on_data_table_row_selected(self, event) -> None:
        self.action_open()

    def on_data_table_row_highlighted(self, event) -> None:
        """An operator with unreadable parts: their reasons on the status line (the column is cut)."""
        op = self.app.savepoint.operators[event.cursor_row]
        self.status(f"unreadable: {unreadable_text(op)}" if op.unreadable
                    else f"{len(self.app.savepoint.operators)} operator(s); Enter opens one")


def warm_up(sp) -> None:
    """Read one row of the first readable keyed table while the operators are looked at: the
    decoders' imports and compiled kernels load then (about a second), not on the first page."""
    from statectl.readers.questions import StateQuestions

    for op in sp.operators:
        if op.keyed is not None and op.keyed.states and not op.unreadable:
            try:
                StateQuestions(sp, op).page("keyed", None, 1)
            except StatectlError:  # a damaged part says so when it is opened
                pass
            return


class StatesScreen(Page):
    BINDINGS = [Binding("enter", "open", "Open"), Binding("z", "sizes", "Sizes")]

    def __init__(self, op: Operator):
        super().__init__(f"operator {op.label}" + (f"  {op.name}" if op.name else ""))
        self.op = op
        self.entries = state_entries(op)

    def on_mount(self) -> None:
        self.table.show_rows(["state", "scope", "kind", "TTL", "size", "type", "unreadable"],
                             [[e.name, e.scope, e.kind, e.ttl, e.size, e.type, e.reason] for e in self.entries])
        self.status(f"{len(self.entries)} state(s); Enter opens one, z shows sizes" if self.entries
                    else "no state")

    def action_open(self) -> None:
        if not self.entries:
            return
        entry: StateEntry = self.entries[self.table.cursor_row]
        if entry.table is None:
            self.failed(StatectlError(f"{entry.name}: {entry.reason}"))
            return
        self.app.push_screen(TableScreen(TableView(self.app.savepoint, self.op, entry)))

    def on_data_table_row_selected(self, event) -> None:
        self.action_open()

    def on_data_table_row_highlighted(self, event) -> None:
        entry = self.entries[event.cursor_row]
        self.status(f"unreadable: {entry.name}: {entry.reason}" if entry.reason
                    else f"{len(self.entries)} state(s); Enter opens one, z shows sizes")

    def action_sizes(self) -> None:
        self.app.push_screen(SizesScreen(self.op, self.entries))


class TableScreen(Page):
    BINDINGS = [
        Binding("enter", "open", "Value"),
        Binding("n,pagedown", "next", "Next page"), Binding("p,pageup", "previous", "Prev page"),
        Binding("g", "first", "First page", show=False),
        Binding("slash", "filter", "Filter", key_display="/"), Binding("k", "key", "Key"),
        Binding("c", "copy_key", "Copy key"), Binding("y", "copy_row", "Copy value"),
        Binding("s", "save", "Save"), Binding("S", "save_all", "Save all"),
    ]

    def __init__(self, view: TableView):
        what = view.entry.name if view.entry.scope != "operator" else f"operator state {view.entry.name}"
        super().__init__(f"{view.operator.label} / {what}")
        self.view = view

    def on_mount(self) -> None:
        self._run(self.view.first)

    def _run(self, load) -> None:
        """Show the page *load* gives (None: nothing to show; the table stays as it was)."""
        try:
            rows = load()
        except StatectlError as e:
            self.failed(e)
            return
        if rows is not None:
            self._show(rows)
        self.status(self.view.position())

    def _show(self, rows) -> None:
        self.table.show_table(rows, time_columns(rows.schema, self.view.entry.table == TIMERS))

    def action_next(self) -> None:
        self._run(self.view.next)

    def action_previous(self) -> None:
        self._run(self.view.previous)

    def action_first(self) -> None:
        self._run(self.view.first)

    def action_filter(self) -> None:
        self.app.push_screen(Prompt("Show keys containing (empty: every key):"),
                             lambda text: text is not None and self._run(lambda: self.view.set_filter(text)))

    def action_key(self) -> None:
        if self.view.keyed:
            self.app.push_screen(Prompt("Jump to key (a string as is; a number, or a tuple as JSON):"),
                                 lambda text: text and self.jump(text))

    def jump(self, text: str) -> None:
        try:
            found = self.view.find_key(text)
        except StatectlError as e:
            self.failed(e)
            return
        if found is None:
            self.status(f"no key {text} (its key group holds no such row)")
            return
        self._show(self.view.rows)
        self.table.move_cursor(row=found)
        self.status(self.view.position())

    def _row(self) -> dict | None:
        rows = self.view.rows
        if rows is None or not rows.num_rows:
            return None
        return rows.slice(self.table.cursor_row, 1).to_pylist()[0]

    def action_open(self) -> None:
        if (row := self._row()) is not None:
            self.app.push_screen(ValueScreen(self.view, self.table.cursor_row, row))

    def on_data_table_row_selected(self, event) -> None:
        self.action_open()

    def action_copy_key(self) -> None:
        if (row := self._row()) is not None and self.view.keyed:
            self.app.copy_to_clipboard(row_json(row, self.view.rows.schema, self.view.key_columns))
            self.status("key copied as JSON")

    def action_copy_row(self) -> None:
        if (row := self._row()) is not None:
            self.app.copy_to_clipboard(row_json(row, self.view.rows.schema))
            self.status("row copied as JSON")

    def action_save(self) -> None:
        self.app.push_screen(Prompt("Save the rows shown to (.csv, .jsonl or .parquet):"),
                             lambda path: path and self.save(path))

    def action_save_all(self) -> None:
        self.app.push_screen(Prompt("Save every row of the table (the filter applied) to (.csv, .jsonl or .parquet):"),
                             lambda path: path and self.save_all(path))

    def save(self, path: str) -> None:
        from .saving import save_rows

        try:
            save_rows(self.view.rows, path, self.view.savepoint)
        except StatectlError as e:
            self.failed(e)
            return
        self.status(f"{self.view.rows.num_rows} row(s) saved to {path}")

    def save_all(self, path: str) -> None:
        """Every row of the table saved to *path*, read in a worker thread."""
        self.status("reading every row of the table ...")
        self.run_worker(lambda: self._save_all(path), thread=True, exclusive=True, group="save")

    def _save_all(self, path: str) -> None:
        from .saving import save_rows

        try:
            rows = self.view.whole()
            save_rows(rows, path, self.view.savepoint)
        except StatectlError as e:
            self.app.call_from_thread(self.failed, e)
            return
        self.app.call_from_thread(self.status, f"{rows.num_rows} row(s) saved to {path}")


class ValueScreen(Page):
    BINDINGS = [Binding("c", "copy_key", "Copy key"), Binding("y", "copy_row", "Copy value")]

    def __init__(self, view: TableView, index: int, row: dict):
        key = ", ".join(f"{k}={v!r}" for k, v in view.key_of(index).items()) if view.keyed else f"row {index}"
        super().__init__(f"{view.operator.label} / {view.entry.name} / {key}")
        self.view, self.index, self.row = view, index, row

    def body(self) -> ComposeResult:
        with VerticalScroll():
            yield value_tree("value", row_tree(self.row, self.view.rows.schema), id="value")
            if self.view.keyed and self.view.entry.table != TIMERS:
                yield Static(Text("timers of this key", style="bold"))
                yield RowsTable(id="rows")

    def on_mount(self) -> None:
        self.query_one("#value").focus()
        if not self.query("#rows"):
            return
        try:
            timers = self.view.timers_of(self.index)
        except StatectlError as e:
            self.failed(e)
            return
        self.table.show_table(timers, time_columns(timers.schema, timers=True))
        self.table.styles.height = timers.num_rows + 2
        self.status(f"{timers.num_rows} timer(s) of this key")

    def action_copy_key(self) -> None:
        if self.view.keyed:
            self.app.copy_to_clipboard(row_json(self.row, self.view.rows.schema, self.view.key_columns))
            self.status("key copied as JSON")

    def action_copy_row(self) -> None:
        self.app.copy_to_clipboard(row_json(self.row, self.view.rows.schema))
        self.status("row copied as JSON")


class SizesScreen(Page):
    """Bytes per state, the key groups holding the most bytes, and (asked with ``l``: it reads
    every key) each keyed state's largest keys, as `statectl stats` finds them."""

    TOP = 20
    LARGEST = 5  # keys per state
    STATE_COLUMNS = ["state", "scope", "size"]
    BINDINGS = [Binding("l", "largest", "Largest keys")]

    def __init__(self, op: Operator, entries: list[StateEntry]):
        super().__init__(f"sizes of {op.label}")
        self.op, self.entries = op, entries

    def body(self) -> ComposeResult:
        yield RowsTable(id="states")
        yield Static(Text(f"key groups holding the most bytes (top {self.TOP})", style="bold"))
        yield RowsTable(id="rows")
        yield Static(Text(f"largest keys of each state (top {self.LARGEST}; l reads every key)", style="bold"))
        yield RowsTable(id="largest")

    @property
    def _keyed_readable(self) -> bool:
        return self.op.keyed is not None and self.op.unreadable_part(KEYED_PART) is None

    def action_largest(self) -> None:
        if not self._keyed_readable:
            self.status("no readable keyed state: no keys")
            return
        self.status("reading every key of the keyed state ...")
        self.run_worker(self._largest, thread=True, exclusive=True, group="largest")

    def _largest(self) -> None:
        """In a worker thread: every keyed state's largest keys, shown when read."""
        from statectl.readers.questions import StateQuestions
        from statectl.readers.stats import largest_keys

        try:
            states = largest_keys(StateQuestions(self.app.savepoint, self.op), self.LARGEST)
        except StatectlError as e:
            self.app.call_from_thread(self.failed, e)
            return
        self.app.call_from_thread(self._show_measured, states)

    def _show_measured(self, states: list) -> None:
        """Each keyed state's largest keys, and in the states table its bytes, rows and elements
        as measured (a Flink canonical stream holds every state of a key group together, so
        `_metadata` gives no size per state)."""
        self.query_one("#largest", RowsTable).show_rows(
            ["state", "key", "bytes", "elements"],
            [[s.name, printable(k.key if k.namespace is None else f"{k.key} / {k.namespace}"),
              human_bytes(k.bytes), f"{k.elements:,}"] for s in states for k in s.largest])
        measured = {s.name: s for s in states}
        self.query_one("#states", RowsTable).show_rows(
            self.STATE_COLUMNS + ["bytes", "rows", "elements"],
            [[*self._state_row(e), *self._measured_cells(measured.get(e.state))]
             for e in self.entries])
        self.status(f"the largest keys and the bytes of {len(states)} keyed state(s)")

    @staticmethod
    def _state_row(e) -> list:
        return [e.name, e.scope, e.size]

    @staticmethod
    def _measured_cells(figures) -> list[str]:
        if figures is None:
            return ["", "", ""]
        return [human_bytes(figures.bytes), f"{figures.rows:,}", f"{figures.elements:,}"]

    def on_mount(self) -> None:
        self.query_one("#states", RowsTable).show_rows(self.STATE_COLUMNS, [self._state_row(e) for e in self.entries])
        if not self._keyed_readable:
            self.status("no readable keyed state: no key groups")
            return
        from statectl.readers.questions import StateQuestions

        try:
            sizes = StateQuestions(self.app.savepoint, self.op).key_group_sizes()
        except StatectlError as e:
            self.failed(e)
            return
        top = sizes.take(pc.sort_indices(sizes, [("bytes", "descending")])).slice(0, self.TOP)
        self.table.show_rows(["key group", "rows", "bytes", "exact"],
                             [[r["key_group"], f"{r['rows']:,}", human_bytes(r["bytes"]),
                               "yes" if r["bytes_exact"] else "estimate"] for r in top.to_pylist()])
        total = pc.sum(sizes["bytes"]).as_py() or 0
        self.status(f"{sizes.num_rows} key group(s) hold {pc.sum(sizes['rows']).as_py() or 0:,} row(s), "
                    f"{human_bytes(total)}")


HELP = """\
# statectl explore

Browse a savepoint; nothing is ever written into it.

| key | does |
|---|---|
| Enter | open the operator, state or row under the cursor |
| Escape | back |
| n / PageDown, p / PageUp, g | next, previous, first page |
| k | jump to a key (only its key group is read) |
| / | show keys containing a text |
| c, y | copy the key, the row as JSON |
| s, S | save the rows shown, every row of the table (.csv, .jsonl, .parquet) |
| z | sizes of the operator's states and key groups (there, l: each state's largest keys) |
| ? | this help; q quits |
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]
    DEFAULT_CSS = "HelpScreen { align: center middle; } HelpScreen > VerticalScroll " \
                  "{ width: 76; height: auto; max-height: 22; border: round $accent; background: $panel; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
