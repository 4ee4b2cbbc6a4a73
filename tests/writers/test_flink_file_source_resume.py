"""A FileSource position rewritten by `bootstrap --base` is where the real job resumes: a
FileSource job (`tests/file_source_job/`, Flink 2.3, parallelism 1) reading two files of 600
numbered lines is savepointed mid-file; the savepoint restored as it is resumes after the
lines its reader had emitted, and restored after a fix that moves the reader position 100
records on resumes 100 lines later; the enumerator's file not yet assigned is read whole
either way (its coordinator state kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

import statectl
from support.cli_runner import statectl as run
from support.java_programs import java

pytestmark = pytest.mark.slow  # three Flink runs and a Spark write

MAIN = "filesourcejob.Main"
LINES = 600
FIX = """
operators:
  - uid: file-source
    parallelism: 1
    operator_state:
      - name: SourceReaderState
        kind: list
        column: value
        input: {sql: "SELECT struct(value.version AS version, value.split_id AS split_id, value.path AS path,
                 value.offset AS offset, value.length AS length,
                 value.file_modification_time AS file_modification_time, value.file_size AS file_size,
                 value.hostnames AS hostnames, value.reader_offset AS reader_offset,
                 value.reader_records_after_offset + 100 AS reader_records_after_offset) AS value
                 FROM `file-source.SourceReaderState`"}
"""


def restored_lines(savepoint: Path, out: Path) -> list[str]:
    out.mkdir()
    java("file_source_job", MAIN, "restore", str(savepoint), str(out))
    return (out / "lines.txt").read_text().splitlines()


def test_restored_job_resumes_at_the_rewritten_position(tmp_path):
    (tmp_path / "in").mkdir()
    for f in "ab":
        (tmp_path / "in" / f"{f}.txt").write_text("".join(f"{f}|{i}\n" for i in range(1, LINES + 1)))
    (tmp_path / "save").mkdir()
    java("file_source_job", MAIN, "save", str(tmp_path / "in"), str(tmp_path / "save"), "150")
    base = Path((tmp_path / "save" / "savepoint.txt").read_text().removeprefix("file:"))
    sp = statectl.open_savepoint(str(base))
    [split] = [r["value"] for r in sp.operator_state("file-source", "SourceReaderState").to_pylist()]
    [pending] = [r["value"] for r in sp.operator_state("file-source", "coordinator").to_pylist()]
    name, done = split["path"].rsplit("/", 1)[1][0], split["reader_records_after_offset"]
    other = pending["path"].rsplit("/", 1)[1][0]
    assert done >= 150 and {name, other} == {"a", "b"}

    (tmp_path / "fix.yaml").write_text(FIX)
    result = run("bootstrap", str(tmp_path / "fixed"), "--base", str(base), "--format", "flink", "--spec",
                 str(tmp_path / "fix.yaml"))
    assert result.returncode == 0, result.stderr

    for savepoint, skipped in ((base, done), (tmp_path / "fixed", done + 100)):
        lines = restored_lines(savepoint, tmp_path / f"restored-{skipped}")
        assert [x for x in lines if x.startswith(f"{name}|")] == [f"{name}|{i}" for i in range(skipped + 1, LINES + 1)]
        assert sorted(x for x in lines if x.startswith(f"{other}|")) == sorted(f"{other}|{i}" for i in range(1, LINES + 1))
