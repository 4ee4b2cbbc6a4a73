"""`statectl explore`'s sizes screen (bytes per state and key group, each state's largest keys as
`statectl stats` finds them) and saving (the rows shown, every row of the table with the filter
applied; never into the savepoint), driven headless (support/explore_driver.py)."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq

from support.explore_driver import FLINK_DEV, choose, drive, first_keyed, open_keyed, screen_text, status
from statectl.cli.explore.screens import SizesScreen
from statectl.cli.output import human_bytes
from statectl.readers.local import local_table
from statectl.readers.questions import StateQuestions
from statectl.readers.resolve import KEYED, TableChoice
from statectl.readers.stats import savepoint_stats
from statectl.statefmt.formats import load


def test_operator_state_and_sizes():
    path = FLINK_DEV / "long-hashmap-canonical" / "savepoint"
    sp = load(str(path))
    bcast = first_keyed(sp, "lk-bcast")
    proc = first_keyed(sp, "lk-proc")

    async def script(app, pilot):
        await choose(pilot, sp.operators.index(bcast))
        await choose(pilot, 0)
        rows = app.screen.view.rows
        table_text = screen_text(app)
        for _ in range(2):
            await pilot.press("escape")
        await choose(pilot, sp.operators.index(proc))
        await pilot.press("z")
        await pilot.pause()
        assert isinstance(app.screen, SizesScreen)
        return rows, table_text, screen_text(app), status(app)

    rows, table_text, sizes_text, sizes_status = drive(path, script)
    assert rows.equals(local_table(sp, TableChoice(bcast, "operator", ("rules",))))
    assert "lk-bcast / operator state rules" in table_text
    assert "key group" in sizes_text and "avg" in sizes_text
    total = sum(StateQuestions(sp, proc).key_group_sizes()["rows"].to_pylist())
    assert f"hold {total:,} row(s)" in sizes_status


def test_the_sizes_screen_shows_each_states_largest_keys_as_stats_finds_them():
    path = FLINK_DEV / "long-hashmap-canonical" / "savepoint"
    sp = load(str(path))
    proc = first_keyed(sp, "lk-proc")

    async def script(app, pilot):
        await choose(pilot, sp.operators.index(proc))
        await pilot.press("z")
        await pilot.pause()
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        cells = [[[str(t.get_cell_at((r, c))) for c in range(len(t.columns))] for r in range(t.row_count)]
                 for t in (app.screen.query_one("#largest"), app.screen.query_one("#states"))]
        return *cells, status(app)

    rows, states, line = drive(path, script, size=(160, 60))
    stats = {s.name: s for op in savepoint_stats(sp, ["lk-proc"], top=SizesScreen.LARGEST).operators
             for s in op.keyed.states}
    want = [[s.name, k.key, human_bytes(k.bytes), f"{k.elements:,}"] for s in stats.values() for k in s.largest]
    assert rows == want and len(rows) >= 2 * len(stats) > 0
    # the states table gains each keyed state's bytes, rows and elements as measured (a canonical
    # stream holds all states of a key group: `_metadata` gives the table's size only)
    measured = {row[0]: row[3:] for row in states}
    assert {name: measured[name] for name in stats} == \
        {name: [human_bytes(s.bytes), f"{s.rows:,}", f"{s.elements:,}"] for name, s in stats.items()}
    assert measured["(keyed table)"] == measured["(timers)"] == ["", "", ""]
    assert line == f"the largest keys and the bytes of {len(stats)} keyed state(s)"


def test_save_writes_the_rows_shown_and_never_into_the_savepoint(tmp_path):
    path = tmp_path / "sp"
    shutil.copytree(FLINK_DEV / "long-hashmap-canonical" / "savepoint", path)
    sp = load(str(path))
    op = first_keyed(sp, "lk-proc")
    out = tmp_path / "out"
    out.mkdir()

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        saved = []
        for name in ("rows.csv", "rows.jsonl", "rows.parquet"):
            app.screen.save(str(out / name))
            saved.append(status(app))
        app.screen.save(str(path / "inside.csv"))
        inside = status(app)
        app.screen.save(str(out / "rows.txt"))
        return app.screen.view.rows, saved, inside, status(app)

    rows, saved, inside, bad = drive(path, script)
    assert saved == [f"{rows.num_rows} row(s) saved to {out / n}" for n in ("rows.csv", "rows.jsonl", "rows.parquet")]
    assert pq.read_table(out / "rows.parquet").equals(rows)
    lines = (out / "rows.jsonl").read_text().splitlines()
    assert len(lines) == rows.num_rows and json.loads(lines[0])["key"] == rows["key"][0].as_py()
    assert (out / "rows.csv").read_text().splitlines()[0] == ",".join(rows.column_names)
    assert inside.startswith("unreadable: output ") and "which this command reads" in inside
    assert bad == f"unreadable: {out / 'rows.txt'}: name a .csv, .jsonl or .parquet file"
    assert not (path / "inside.csv").exists() and sorted(p.name for p in out.iterdir()) == \
        ["rows.csv", "rows.jsonl", "rows.parquet"]


def test_save_all_writes_every_row_of_the_table_the_filter_applied(tmp_path, monkeypatch):
    from statectl.cli.explore import browse

    monkeypatch.setattr(browse, "WHOLE_ROWS", 7)  # the table read in several pieces
    path = FLINK_DEV / "long-hashmap-canonical" / "savepoint"
    sp = load(str(path))
    op = first_keyed(sp, "lk-proc")
    out = tmp_path / "out"
    out.mkdir()

    async def script(app, pilot):
        await open_keyed(app, pilot, op)
        lines = []
        for text, name in (("", "all.parquet"), ("1", "ones.jsonl")):
            app.screen.view.set_filter(text)
            app.screen.save_all(str(out / name))
            await app.workers.wait_for_complete()
            await pilot.pause()
            lines.append(status(app))
        return app.screen.view.columns(), lines

    columns, lines = drive(path, script)
    assert columns[0] == "_key_group"  # the pages' columns: the key group, then the table's
    whole = local_table(sp, TableChoice(op, KEYED, ())).select(columns[1:])
    saved = pq.read_table(out / "all.parquet")
    assert saved.column_names == columns and saved["_key_group"].null_count == 0
    assert whole.num_rows == 30 and saved.drop(["_key_group"]).sort_by("key").equals(whole.sort_by("key"))
    ones = [json.loads(line) for line in (out / "ones.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in ones) == sorted(k for k in whole["key"].to_pylist() if "1" in str(k))
    assert lines == [f"30 row(s) saved to {out / 'all.parquet'}", f"{len(ones)} row(s) saved to {out / 'ones.jsonl'}"]
