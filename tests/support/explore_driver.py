"""Driving `statectl explore` headless with Textual's pilot, for the explorer's tests
(tests/cli/test_explore*.py): run the app on a savepoint (checking nothing is written into it),
read the screen's text and status line, pick rows, type into prompts."""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path

from support.untrusted_helpers import snapshot
from statectl.cli.explore.app import ExploreApp
from statectl.cli.explore.screens import OperatorsScreen, StatesScreen, TableScreen, ValueScreen
from statectl.readers.resolve import KEYED
from statectl.statefmt.formats import load

FIXTURES = Path(__file__).parents[1] / "fixtures"
FLINK_DEV = FIXTURES / "flink-dev"
SIZE = (80, 24)


def drive(path, script, size=SIZE):
    """Run the explorer on *path* headless and ``await script(app, pilot)``; the savepoint's
    files are byte-identical afterwards."""
    before = snapshot(path)
    result = run_explorer(str(path), script, size)
    assert snapshot(path) == before, "the explorer wrote into the savepoint"
    return result


def run_explorer(location: str, script, size=SIZE):
    """Run the explorer on the savepoint at *location* (any location statectl opens) headless and
    ``await script(app, pilot)``."""
    async def main():
        app = ExploreApp(load(location))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return await script(app, pilot)

    return asyncio.run(main())


def screen_text(app) -> str:
    """The visible text of the screen, line by line, from Textual's SVG capture."""
    svg = app.export_screenshot()
    lines: dict[float, list[str]] = {}
    for y, text in re.findall(r'<text[^>]*\by="([\d.]+)"[^>]*clip-path="url\(#terminal-[^"]*-line-[^>]*>(.*?)</text>', svg):
        lines.setdefault(float(y), []).append(html.unescape(text).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items()))


def status(app) -> str:
    return str(app.screen.query_one("#status").render())


async def choose(pilot, row: int) -> None:
    """Put the cursor of the screen's table on *row* and press Enter."""
    pilot.app.screen.table.move_cursor(row=row)
    await pilot.press("enter")
    await pilot.pause()


def first_keyed(sp, name):
    return next(o for o in sp.operators if name in (o.uid, o.name))


async def open_keyed(app, pilot, op, state=None):
    await choose(pilot, app.savepoint.operators.index(op))
    entries = app.screen.entries
    await choose(pilot, next(i for i, e in enumerate(entries) if e.table == KEYED and e.state == (state or e.state)))


KEY_NAMES = {" ": "space", "/": "slash", "-": "minus", '"': "quotation_mark", "[": "left_square_bracket",
             "]": "right_square_bracket", ",": "comma", ":": "colon", "@": "at"}


async def type_into_prompt(pilot, key: str, text: str) -> None:
    """Press *key*, type *text* into the prompt it opens, press Enter."""
    await pilot.press(key)
    await pilot.pause()
    for ch in text:
        await pilot.press(KEY_NAMES.get(ch, ch))
    await pilot.press("enter")
    await pilot.pause()


def tree_labels(node, depth=0):
    yield "  " * depth + str(node.label)
    for child in node.children:
        yield from tree_labels(child, depth + 1)


async def browse_everything(app, pilot):
    """Open every operator, every state with a table, its first row's value; back each time."""
    opened = []
    for i, op in enumerate(app.savepoint.operators):
        await choose(pilot, i)
        assert isinstance(app.screen, StatesScreen) and app.screen.op is op
        for j, entry in enumerate(app.screen.entries):
            await choose(pilot, j)
            if entry.table is None:  # unreadable: said so, and the screen stays
                assert isinstance(app.screen, StatesScreen) and "unreadable" in status(app)
                continue
            assert isinstance(app.screen, TableScreen), status(app)
            rows = app.screen.view.rows
            assert rows is not None, status(app)
            if rows.num_rows:
                await pilot.press("enter")
                await pilot.pause()
                assert isinstance(app.screen, ValueScreen)
                assert len(app.screen.query_one("#value").root.children) == rows.num_columns
                await pilot.press("escape")
            opened.append((op.label, entry.name, rows.num_rows))
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, OperatorsScreen)
    return opened
