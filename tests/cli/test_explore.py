"""`statectl explore` driven headless by Textual's pilot: every operator, state and value of
statectl's own, Flink DataStream and Flink SQL savepoints browsed; pages concatenated equal a
full read; a key found through its key group; the key filter; the value tree (RowData row
kinds, TTL times); copy; a damaged savepoint browsed around its damage; what the
main screens show at 80x24 (the text of Textual's SVG capture); and no file written into the
savepoint."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.explore_driver import (FIXTURES, FLINK_DEV, browse_everything, choose, drive, first_keyed, open_keyed,
                                    screen_text, status, tree_labels, type_into_prompt)
from support.readers_savepoints import build_own_family
from statectl.cli.explore.browse import state_entries
from statectl.cli.explore.values import epoch_text
from statectl.cli.explore.screens import HelpScreen
from statectl.readers.local import local_table
from statectl.readers.resolve import KEYED, TIMERS, TableChoice
from statectl.statefmt.formats import load

DATASTREAM = [FLINK_DEV / n / "savepoint" for n in ("long-hashmap-canonical", "pojo-hashmap-canonical",
                                                    "tuple-rocksdb-native", "int-hashmap-native")]
SQL = [FIXTURES / "flink-sql-probe" / n for n in ("hashmap-canonical", "rocksdb-native")]


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    family = build_own_family(tmp_path_factory.mktemp("own"))
    return {name: Path(sp.location) for name, sp in family.items()}


@pytest.mark.slow  # seconds of Textual rendering per savepoint
@pytest.mark.parametrize("name", ["canonical", "source", "native"])
def test_every_state_and_value_of_statectl_savepoints(own, name):
    opened = drive(own[name], browse_everything)
    assert opened and any(rows for _, _, rows in opened)


@pytest.mark.slow
@pytest.mark.parametrize("path", DATASTREAM + SQL, ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_every_state_and_value_of_flink_savepoints(path):
    opened = drive(path, browse_everything)
    sp = load(str(path))
    expected = [(op.label, e.name) for op in sp.operators for e in state_entries(op) if e.table is not None]
    assert [(op, state) for op, state, _ in opened] == expected
    assert sum(rows for _, _, rows in opened) > 0


def full_read(sp, op, table, columns):
    rows = local_table(sp, TableChoice(op, table), include_key_group=True)
    return rows.take(pc.sort_indices(rows, [("_key_group", "ascending")])).select(columns)


async def all_pages(app, pilot):
    """Every page of the screen's table, Next pressed until the last; then Previous back."""
    pages = [app.screen.view.rows]
    while app.screen.view.following is not None:
        await pilot.press("n")
        await pilot.pause()
        pages.append(app.screen.view.rows)
    await pilot.press("n")  # past the last page: nothing changes
    assert app.screen.view.rows is pages[-1] and "last page" in status(app)
    back = [pages[-1]]
    for _ in pages[1:]:
        await pilot.press("p")
        await pilot.pause()
        back.append(app.screen.view.rows)
    return pages, back[::-1]


@pytest.mark.parametrize("where, uid, table", [
    ("source", "proc", KEYED), ("native", "proc", KEYED), ("source", "proc", TIMERS),
    (FLINK_DEV / "long-hashmap-canonical" / "savepoint", "lk-win", KEYED),
    (FIXTURES / "flink-sql-probe" / "rocksdb-native", "Join[62]", KEYED),
])
def test_pages_concatenated_equal_the_full_read(own, where, uid, table):
    path = own[where] if isinstance(where, str) else where
    sp = load(str(path))
    op = next(o for o in sp.operators if uid in (o.uid, o.name))
    entry = next(i for i, e in enumerate(state_entries(op)) if e.table == table)
    size = max(3, local_table(sp, TableChoice(op, table)).num_rows // 10)  # about ten pages

    async def script(app, pilot):
        await choose(pilot, sp.operators.index(op))
        app.screen.table.move_cursor(row=entry)
        await pilot.press("enter")
        await pilot.pause()
        app.screen.view.size = size
        await pilot.press("g")
        await pilot.pause()
        return app.screen.view.columns(), await all_pages(app, pilot)

    columns, (pages, back) = drive(path, script)
    full = full_read(sp, op, table, columns)
    assert len(pages) > 2
    assert pa.concat_tables(pages).equals(full)
    assert all(a.equals(b) for a, b in zip(pages, back))


@pytest.mark.parametrize("path, uid, key, column, value", [
    (FLINK_DEV / "long-hashmap-canonical" / "savepoint", "lk-proc", "9007199254740993", "key", 9007199254740993),
    (FLINK_DEV / "pojo-hashmap-canonical" / "savepoint", "pj-proc", "user-016", "key", "user-016"),
    (FIXTURES / "flink-sql-probe" / "hashmap-canonical", "Join[62]", "857", "f0", 857),
])
def test_a_key_is_found_through_its_key_group(path, uid, key, column, value):
    sp = load(str(path))
    op = first_keyed(sp, uid)

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        await type_into_prompt(pilot, "k", key)
        view, table = app.screen.view, app.screen.table
        found = view.rows.slice(table.cursor_row, 1).to_pylist()[0]
        await type_into_prompt(pilot, "k", "4242424")
        missing = status(app)
        await pilot.press("p")  # back to the page before the jump: the first
        await pilot.pause()
        return found, missing, view.cursor

    found, missing, back = drive(path, script)
    assert found[column] == value
    full = full_read(sp, op, KEYED, list(found))
    assert found == full.filter(pc.equal(full[column], value)).to_pylist()[0]
    assert missing.startswith("no key 4242424")
    assert (back.key_group, back.offset) == (0, 0)


def test_the_filter_shows_keys_containing_the_text():
    path = FLINK_DEV / "pojo-hashmap-canonical" / "savepoint"
    sp = load(str(path))
    op = first_keyed(sp, "pj-proc")

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        await type_into_prompt(pilot, "slash", "00")
        shown = app.screen.view.rows
        text = status(app)
        await type_into_prompt(pilot, "slash", "")
        return shown, text, app.screen.view.rows.num_rows

    shown, text, unfiltered = drive(path, script)
    full = full_read(sp, op, KEYED, shown.column_names)
    assert shown.equals(full.filter(pc.match_substring(full["key"], "00")))
    assert 0 < shown.num_rows < unfiltered and "key contains '00'" in text


def test_the_value_tree_shows_ttl_times_maps_and_the_keys_timers():
    path = FLINK_DEV / "pojo-hashmap-canonical" / "savepoint"
    sp = load(str(path))
    op = first_keyed(sp, "pj-proc")

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        await type_into_prompt(pilot, "k", "user-016")
        await pilot.press("enter")
        await pilot.pause()
        labels = list(tree_labels(app.screen.query_one("#value").root))
        timers = app.screen.table
        times = [str(timers.get_cell_at((r, 1))) for r in range(timers.row_count)]
        await pilot.press("y")
        value = app.clipboard
        await pilot.press("c")
        return labels, timers.row_count, value, app.clipboard, screen_text(app), times

    labels, timers, value, key, text, times = drive(path, script)
    assert "  ttl_last_ttl_ts: 2026-11-22T11:16:16.419+00:00 (1795346176419)" in labels
    assert "  ttl_seen_ttl_ts: map of 3" in labels
    assert '    "view": 2026-11-22T11:16:16.418+00:00 (1795346176418)' in labels
    assert "  avg: struct" in labels and "    f0: 4578" in labels
    assert "  key: \"user-016\"" in labels
    expected = local_table(sp, TableChoice(op, TIMERS, keys=(("user-016",),)))
    assert timers == expected.num_rows > 0
    assert expected.column_names[1] == "timestamp"  # each timer's time shown as a UTC time
    assert times == [epoch_text(t) for t in expected.column("timestamp").to_pylist()]
    assert all(t.endswith("+00:00") for t in times)
    assert json.loads(value)["ttl_last"] == "revenue@344" and json.loads(key) == {"key": "user-016"}
    assert "pj-proc / " in text and "timers of this key" in text


def test_rowdata_shows_its_row_kind():
    from statectl.cli.explore.values import row_tree

    t = pa.struct([("f0", pa.int64()), ("_rowkind", pa.string())])
    schema = pa.schema([("s", pa.map_(t, pa.int32()))])
    [node] = row_tree({"s": [({"f0": 1, "_rowkind": "-U"}, 2)]}, schema)
    assert [c.label for c in node.children] == ['{"f0":1,"_rowkind":"-U"}: 2']
    assert [c.label for c in node.children[0].children] == ["key: row (-U)"]
    assert [c.label for c in node.children[0].children[0].children] == ["f0: 1"]


OFFSETS_AT = 0xCA + 9  # lk-proc subtask 0's key-group offsets in _metadata (test_flink_damaged.py)


@pytest.mark.slow  # browses every operator
def test_a_damaged_flink_savepoint_shows_the_damage_and_the_rest(tmp_path):
    path = tmp_path / "sp"
    shutil.copytree(FLINK_DEV / "long-hashmap-canonical" / "savepoint", path)
    data = bytearray((path / "_metadata").read_bytes())
    struct.pack_into(">q", data, OFFSETS_AT + 8 * 3, 1 << 40)
    (path / "_metadata").write_bytes(bytes(data))
    sp = load(str(path))

    proc = sp.operators.index(first_keyed(sp, "lk-proc"))
    why = f"{path}/_metadata: operator lk-proc subtask 0: key group 3's offset {1 << 40} lies outside " \
          "its stream of 17835 bytes"

    async def script(app, pilot):
        opened = await browse_everything(app, pilot)
        app.screen.table.move_cursor(row=proc)
        await pilot.pause()
        first = screen_text(app), status(app)
        await choose(pilot, proc)
        states = screen_text(app)
        await choose(pilot, 0)
        return first, opened, states, status(app)

    (first, highlighted), opened, states, said = drive(path, script)
    assert " lk-proc       lk-proc               keyed      3/256        54.9 KiB  keyed sta" in first
    assert highlighted == f"unreadable: keyed state: {why}"
    assert ("lk-bcast", "rules", 7) in opened and not any(op == "lk-proc" for op, _, _ in opened)
    assert " keyed state  unreadable  unreadable" in states and "54.9 KiB" in states
    assert said == f"unreadable: keyed state: {why}"


def test_a_damaged_file_of_statectl_stops_its_page_only(own, tmp_path):
    path = tmp_path / "copy"
    shutil.copytree(own["source"], path)
    sp = load(str(path))
    op = next(o for o in sp.operators if o.keyed is not None)
    first = sorted(op.keyed.files, key=lambda f: f.key_groups)[0]
    damaged = path / first.ref.path
    damaged.write_bytes(damaged.read_bytes()[:-10])

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        said = status(app)
        still = type(app.screen).__name__
        await pilot.press("escape")
        await pilot.pause()
        timers = next(i for i, e in enumerate(app.screen.entries) if e.table == TIMERS)
        await choose(pilot, timers)
        return said, still, app.screen.view.rows

    said, still, timers = drive(path, script)
    assert said.startswith("unreadable: ") and first.ref.path.rsplit("/", 1)[-1] in said
    assert still == "TableScreen"
    assert timers.num_rows == local_table(sp, TableChoice(op, TIMERS)).num_rows > 0


@pytest.mark.parametrize("path", [FLINK_DEV / "long-hashmap-canonical" / "savepoint",
                                  FIXTURES / "flink-sql-probe" / "hashmap-canonical"],
                         ids=["datastream", "sql"])
def test_the_main_screens_at_80x24(path):
    sp = load(str(path))
    keyed = next(o for o in sp.operators if o.keyed is not None and o.keyed.states)

    async def script(app, pilot):
        shots = [screen_text(app)]
        await choose(pilot, sp.operators.index(keyed))
        shots.append(screen_text(app))
        await choose(pilot, 0)
        shots.append(screen_text(app))
        await pilot.press("enter")
        await pilot.pause()
        shots.append(screen_text(app))
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shots.append(screen_text(app))
        return shots

    operators, states, table, value, help_ = drive(path, script)
    for shot in (operators, states, table, value):
        assert len(shot.splitlines()) <= 24 and all(len(line) <= 80 for line in shot.splitlines())
    assert " uid " in operators and "name" in operators and "kind" in operators
    assert f"{len(sp.operators)} operator(s); Enter opens one" in operators
    for op in sp.operators[:15]:
        assert (op.uid or op.name)[:12] in operators
    state = keyed.keyed.states[0]
    assert f"operator {keyed.label}" in states and state.name[:15] in states and state.kind in states
    assert "row(s) from key group 0+0" in table and "Next page" in table
    assert f"{keyed.label} / (keyed table)" in table and state.name[:15] in table
    assert "value" in value and "_key_group: " in value
    assert "jump to a key" in help_ and "nothing is ever written" in help_


def test_explore_of_no_savepoint_is_one_error_line(cli, tmp_path):
    missing = str(tmp_path / "nope")
    result = cli("explore", missing)
    assert (result.returncode, result.stdout, result.stderr) == \
        (1, "", f"error: {missing}: no such savepoint directory\n")


def test_other_commands_do_not_import_textual():
    probe = "import sys, statectl.cli.app; print('textual' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.slow  # a process of its own, in a terminal
def test_the_command_runs_in_a_terminal_and_q_quits():
    """`statectl explore` in a pseudo-terminal of 80x24: it draws the operators, and q ends it
    with exit code 0 and the terminal's screen given back."""
    import os
    import pty
    import select
    import time

    example = Path(__file__).parents[2] / "examples" / "flink" / "savepoint"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the console script's entry point, as a user runs it
        os.environ.update(TERM="xterm-256color", COLUMNS="80", LINES="24")
        os.execv(sys.executable, [sys.executable, "-m", "statectl.cli.main", "explore", str(example)])
    shown = b""

    def read(seconds: float, until: bytes) -> None:
        nonlocal shown
        end = time.monotonic() + seconds
        while time.monotonic() < end and until not in shown:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    shown += os.read(fd, 65536)
                except OSError:  # the child has ended
                    return

    read(30, b"Enter opens one")
    assert b"pj-proc" in shown and b"operator(s); Enter opens one" in shown
    os.write(fd, b"q")
    read(10, b"\x1b[?1049l")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"\x1b[?1049l" in shown  # the alternate screen left: the terminal as it was
