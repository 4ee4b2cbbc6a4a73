"""The driver JVM's class-data-sharing archive: dumped once, taken into use only when complete."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from statectl.cli import jvm


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "statectl" / "jvm"


def test_the_first_command_dumps_the_archive_to_a_name_of_its_own(cache):
    archive = jvm.archive_path()
    assert archive.startswith(str(cache)) and archive.endswith(".jsa")
    assert jvm.class_data_sharing() == [f"-XX:ArchiveClassesAtExit={archive}.{jvm.os.getpid()}.tmp"]



def test_c1_only_for_a_read_of_at_most_1_gib():
    assert jvm.driver_java_options(jvm.C1_READ_BYTES).startswith("-XX:TieredStopAtLevel=1 ")
    assert "TieredStopAtLevel" not in jvm.driver_java_options(jvm.C1_READ_BYTES + 1)
    assert "TieredStopAtLevel" not in jvm.driver_java_options(None)  # a write, a rescale, a diff


def test_a_finished_dump_becomes_the_archive(cache):
    archive = jvm.archive_path()
    with open(f"{archive}.123.tmp", "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little") + b"rest")
    assert jvm.class_data_sharing() == [f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={cache}/hs_err_pid%p.log"]
    assert sorted(p.name for p in cache.iterdir()) == [archive.rsplit("/", 1)[1]]


def test_a_broken_dump_is_removed_and_dumped_again(cache):
    archive = jvm.archive_path()
    with open(f"{archive}.123.tmp", "wb") as f:
        f.write(b"\0" * 8)
    assert jvm.class_data_sharing() == [f"-XX:ArchiveClassesAtExit={archive}.{jvm.os.getpid()}.tmp"]
    assert list(cache.iterdir()) == []


def test_a_dump_still_being_written_is_left_alone(cache):
    archive = jvm.archive_path()
    dump = f"{archive}.123.tmp"
    with open(dump, "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little"))
    writer = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)", dump],
                              stdout=subprocess.PIPE)
    writer.stdout.readline()  # its command line, naming the dump, is in place
    try:
        assert jvm.class_data_sharing() == []  # neither the half-written archive nor a second dump
    finally:
        writer.kill()
        writer.wait()
    assert jvm.class_data_sharing() == [f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={cache}/hs_err_pid%p.log"]




@pytest.mark.slow
def test_a_command_whose_jvm_cannot_start_with_the_archive_runs_without_it_and_removes_it(cache, tmp_path):
    """A dump cut short (its JVM killed while writing) starts like an archive, and a JVM given
    it does not start: the command starts Spark again without it, and removes it."""
    from conftest import REPO, statectl_process

    sp = tmp_path / "sp"
    done = statectl_process("bootstrap", "--spec", str(REPO / "examples" / "spec.yaml"), str(sp))
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120  # the bootstrap's JVM dumps as it exits, after the command
    while not list(cache.glob("*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.5)
    (dump,) = cache.glob("*.tmp")
    while jvm._alive(str(dump)) and time.monotonic() < deadline:
        time.sleep(0.5)
    archive = Path(jvm.archive_path())
    data = dump.read_bytes()
    dump.unlink()
    archive.write_bytes(data[: len(data) // 2])
    work = tmp_path / "work"
    work.mkdir()
    done = statectl_process("sql", str(sp), "SELECT count(*) AS n FROM proc", "-f", "jsonl", cwd=work)
    assert (done.returncode, done.stdout, done.stderr) == (0, '{"n":20}\n', "")
    assert not archive.exists()
    assert list(work.iterdir()) == [] and list(cache.glob("hs_err*")) == []  # no crash report left
