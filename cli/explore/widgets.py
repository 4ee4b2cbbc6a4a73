"""The explorer's widgets: a table of text rows or of an Arrow table, a value as a tree, and a
one-line prompt."""

from __future__ import annotations

import pyarrow as pa
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label, Tree

from ..output import printable
from .values import Node, cell


class RowsTable(DataTable):
    """A read-only table whose cursor picks a row; text from files is never markup."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)

    def show_rows(self, columns: list[str], rows: list[list[str]]) -> None:
        """*rows* under *columns* (kept, with their widths, when they are those shown)."""
        same = [str(c.label) for c in self.ordered_columns] == [printable(c) for c in columns]
        self.clear(columns=not same)
        if not same:
            self.add_columns(*(Text(printable(c)) for c in columns))
        self.add_rows([[Text(printable(str(v))) for v in row] for row in rows])

    def show_table(self, table: pa.Table, times: set[str] = frozenset()) -> None:
        """*table*'s rows; the columns named in *times* (epoch milliseconds) as UTC times."""
        types = [f.type for f in table.schema]
        timed = [name in times for name in table.column_names]
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        self.show_rows(table.column_names, [[cell(v, t, time=m) for v, t, m in zip(row, types, timed)]
                                            for row in zip(*columns)])


def value_tree(title: str, nodes: list[Node], **kwargs) -> Tree:
    """*nodes* as an expanded tree under *title* (the first levels open)."""
    tree: Tree = Tree(Text(printable(title)), **kwargs)
    tree.root.expand()

    def add(parent, node: Node, depth: int) -> None:
        if not node.children:
            parent.add_leaf(Text(printable(node.label)))
            return
        branch = parent.add(Text(printable(node.label)), expand=depth < 2)
        for child in node.children:
            add(branch, child, depth + 1)
    for node in nodes:
        add(tree.root, node, 0)
    return tree


class Prompt(ModalScreen[str | None]):
    """One line of text asked for; Enter gives it, Escape gives None."""

    BINDINGS = [("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    Prompt { align: center middle; }
    Prompt > Vertical { width: 70; height: auto; border: round $accent; padding: 0 1; background: $panel; }
    """

    def __init__(self, question: str, value: str = ""):
        super().__init__()
        self.question, self.value = question, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(value=self.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)
