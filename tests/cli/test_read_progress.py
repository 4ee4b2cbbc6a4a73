"""`read` and `sql` show their scan's progress on a terminal's standard error, and nothing
at all when standard error is a pipe or a file."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading

import pytest

from support.builders import build_full_savepoint
from support.cli_runner import statectl


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory):
    return str(build_full_savepoint(tmp_path_factory.mktemp("progress") / "sp").location)


def test_piped_read_and_sql_print_their_rows_only(savepoint):
    read = statectl("read", savepoint, "--uid", "proc", "-f", "jsonl")
    assert read.returncode == 0 and read.stderr == ""
    assert len([json.loads(line) for line in read.stdout.splitlines()]) == 40
    query = statectl("sql", savepoint, "SELECT count(*) AS n FROM proc", "-f", "csv")
    assert (query.returncode, query.stdout, query.stderr) == (0, "n\n40\n", "")


def _run_on_terminal(*args: str, stdout_too: bool = False) -> tuple[int, str, str]:
    """statectl *args* with standard error on a pseudo-terminal, standard output piped or
    (*stdout_too*) on the same terminal; the exit code, what the pipe and the terminal got."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(["statectl", *args], stderr=follower,
                               stdout=follower if stdout_too else subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200",
                                                              "TERM": "xterm"})
    os.close(follower)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out = process.stdout.read().decode() if process.stdout else ""
    code = process.wait(timeout=600)
    reader.join(timeout=30)
    os.close(leader)
    return code, out, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_a_terminal_shows_the_scan_and_the_rows_stay_clean(savepoint):
    code, out, terminal = _run_on_terminal("read", savepoint, "--uid", "proc", "-f", "jsonl", "--engine", "spark")
    assert code == 0, terminal
    assert "reading keyed state of proc" in terminal and "tasks" in terminal
    rows = [json.loads(line) for line in out.splitlines()]  # nothing but the rows
    assert len(rows) == 40
    assert '"user"' not in terminal  # and none of them on the terminal


@pytest.mark.slow
def test_the_bar_ends_before_a_table_is_printed_on_the_same_terminal(savepoint):
    code, _, terminal = _run_on_terminal("read", savepoint, "--uid", "proc", "--state", "count",
                                         "--engine", "spark", stdout_too=True)
    assert code == 0, terminal
    shown, table = terminal.rfind("reading keyed state of proc"), terminal.find("user-0 ")
    assert 0 <= shown < table  # the bar was there, and never drawn again once rows came
    assert "32 row(s)" in terminal  # the rows that have a count
