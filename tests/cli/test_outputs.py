"""A command never writes into a savepoint it reads, nor over what exists unless told to;
every output is checked before Spark starts."""

from __future__ import annotations

import json

import pytest

from statectl.statefmt.formats import load
from statectl.statefmt.validate import validate

from support.builders import build_full_savepoint
from support.cli_runner import statectl
from support.untrusted_helpers import assert_one_error_line, base_and_derived, snapshot

SQL_WRITE = "INSERT OVERWRITE DIRECTORY '{sp}/576dd1d1f766474368806deb544ded87' USING parquet SELECT 1"


def _outputs_inside(base, derived, tmp_path):
    """(arguments, fragment of the error): commands whose output overlaps a savepoint they read."""
    b, d = str(base), str(derived)
    return [
        (["modify", b, f"{b}/inside"], f"output {b}/inside is inside the savepoint {b}"),
        (["modify", d, f"{b}/x"], f"output {b}/x is inside the savepoint {b}"),  # d's lineage
        (["modify", b, str(tmp_path)], f"output {tmp_path} contains the savepoint {b}"),
        (["modify", b, b], f"output {b} is the savepoint {b}"),
        (["bootstrap", "--spec", "examples/spec.yaml", "--base", b, f"{b}/new"],
         f"output {b}/new is inside the savepoint {b}"),
        (["rescale", d, f"{b}/r", "--max-parallelism", "8"], f"output {b}/r is inside the savepoint {b}"),
        (["read", b, "--uid", "src", "--state", "offsets", "--format", "jsonl", "--output",
          f"{b}/_metadata"], f"output {b}/_metadata is inside the savepoint {b}"),
        (["read", d, "--uid", "proc", "--format", "parquet", "--output", f"{b}/576dd1d1f766474368806deb544ded87"],
         "is inside the savepoint"),
        (["sql", b, "SELECT 1", "--format", "csv", "--output", f"{b}/x.csv"], "is inside the savepoint"),
        (["sql", b, SQL_WRITE.format(sp=b)], "statectl sql runs queries only"),
        (["sql", b, f"WITH a AS (SELECT 1) INSERT OVERWRITE DIRECTORY '{b}/x' SELECT * FROM a"],
         "INSERT changes data"),
        (["sql", b, "SELECT 1; DROP TABLE proc"], "runs one query"),
    ]


def test_no_command_writes_into_a_savepoint_it_reads(tmp_path):
    base, derived = base_and_derived(tmp_path)
    before = snapshot(base, derived)
    for args, fragment in _outputs_inside(base, derived, tmp_path):
        assert_one_error_line(statectl(*args, cwd=str(_repo())), fragment)
        assert snapshot(base, derived) == before, args


def _repo():
    from support import REPO
    return REPO


@pytest.mark.parametrize("make, args, fragment", [
    (lambda p: (p / "f.txt").write_text("x"), ["f.txt"], "is a file; give a directory"),
    (lambda p: (p / "f.txt").write_text("x"), ["f.txt/sub/sp"], "lies below {p}/f.txt, which is a file"),
    (lambda p: (p / "full").mkdir() or (p / "full" / "mine.txt").write_text("x"), ["full"],
     "is a directory that is not empty; choose a new output or pass --overwrite"),
])
def test_outputs_that_are_files_or_hold_something_are_refused(tmp_path, make, args, fragment):
    base = tmp_path / "base"
    build_full_savepoint(base)
    make(tmp_path)
    before = snapshot(tmp_path)
    out = str(tmp_path / args[0])
    for command in (["modify", str(base), out],
                    ["bootstrap", "--spec", "examples/spec.yaml", out],
                    ["rescale", str(base), out, "--max-parallelism", "8"]):
        assert_one_error_line(statectl(*command, cwd=str(_repo())),
                              fragment.format(p=tmp_path))
    assert snapshot(tmp_path) == before


def test_read_output_file_is_refused_when_it_exists_or_is_a_directory(tmp_path):
    base = tmp_path / "base"
    build_full_savepoint(base)
    (tmp_path / "old.jsonl").write_text("keep\n")
    (tmp_path / "dir").mkdir()
    read = ["read", str(base), "--uid", "src", "--state", "offsets", "--format", "jsonl", "--output"]
    assert_one_error_line(statectl(*read, str(tmp_path / "old.jsonl")),
                          "already exists; choose a new output or pass --overwrite")
    assert_one_error_line(statectl(*read, str(tmp_path / "dir")), "is a directory; give a file name")
    assert (tmp_path / "old.jsonl").read_text() == "keep\n"


def test_overwrite_replaces_a_savepoint_and_removes_its_files(tmp_path):
    base, _ = base_and_derived(tmp_path)
    out = tmp_path / "out"
    old = build_full_savepoint(out)
    old_files = {f.ref.path for _, f in old.data_files()}
    assert_one_error_line(statectl("modify", str(base), str(out)), "already holds a savepoint")
    result = statectl("modify", str(base), str(out), "--overwrite", "--remove", "proc", "--json")
    assert result.returncode == 0, result.stderr
    new = load(str(out))
    assert new.savepoint_id == json.loads(result.stdout)["savepoint_id"] != old.savepoint_id
    assert [op.uid for op in new.operators] == ["src"]
    assert validate(str(out)).valid
    assert not any((out / p).exists() for p in old_files)
    assert validate(str(base)).valid


def test_read_overwrite_replaces_the_file(tmp_path):
    base = tmp_path / "base"
    build_full_savepoint(base)
    target = tmp_path / "offsets.jsonl"
    target.write_text("old\n")
    result = statectl("read", str(base), "--uid", "src", "--state", "offsets", "--format", "jsonl",
                      "--output", str(target), "--overwrite")
    assert result.returncode == 0, result.stderr
    assert target.read_text() == '{"value":10}\n{"value":11}\n{"value":20}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "offsets.jsonl"]


@pytest.mark.slow
def test_a_spinner_turns_on_a_terminal_while_spark_starts(tmp_path):
    """stderr is a terminal (a pty): the spinner shows; stdout, a pipe, gets the rows alone."""
    import os
    import pty
    import select
    import subprocess

    base = tmp_path / "base"
    build_full_savepoint(base)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["statectl", "read", str(base), "--uid", "src", "--state", "offsets", "--format", "jsonl", "--engine", "spark"],
        stdout=subprocess.PIPE, stderr=slave, env=dict(os.environ, COLUMNS="100", STATECTL_ENGINE="classic"))
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read()
    assert proc.wait() == 0
    os.close(master)
    assert "starting Spark…".encode() in seen
    assert out == b'{"value":10}\n{"value":11}\n{"value":20}\n'
