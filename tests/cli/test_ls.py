"""`statectl ls`, and a folder of snapshots as the input of the reading commands: a folder
holding savepoints of both families, a retained checkpoint, one checkpoint still being written
(no `_metadata`), a damaged `_metadata`, and the stray files of a job's `shared/` folder."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil

import pytest

from support.cli_runner import statectl
from support import REPO
from support.flink_job import FIXTURES
from support.flink_shapes import INCREMENTAL

EXAMPLES = REPO / "examples"


def ok(*args) -> str:
    done = statectl(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _at(metadata, day: str) -> None:
    """A Flink snapshot's time is its `_metadata`'s modification time."""
    t = dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp()
    os.utime(metadata, (t, t))


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ls") / "jobs"
    chk5 = root / "flink-job" / "chk-5"
    shutil.copytree(FIXTURES / "long-rocksdb-native" / "savepoint", chk5)
    _at(chk5 / "_metadata", "2026-01-01T00:00:00")
    savepoint = root / "savepoints" / "savepoint-aa"
    shutil.copytree(FIXTURES / "long-hashmap-canonical" / "savepoint", savepoint)
    _at(savepoint / "_metadata", "2026-02-01T00:00:00")
    (root / "flink-job" / "chk-7").mkdir()  # being written: no _metadata yet
    (root / "flink-job" / "chk-7" / "some-state").write_bytes(b"\x00" * 10)
    (root / "flink-job" / "shared").mkdir()
    (root / "flink-job" / "shared" / "_metadata").write_bytes(b"not a snapshot's")
    (root / "broken").mkdir()
    (root / "broken" / "_metadata").write_bytes(b"\x00\x00\x00\x07garbage")
    ok("bootstrap", "--spec", str(EXAMPLES / "spec.yaml"), str(root / "own" / "base"))
    ok("bootstrap", "--spec", str(EXAMPLES / "new-state.yaml"), str(root / "own" / "v2"),
       "--base", str(root / "own" / "base"))
    return root


@pytest.mark.slow
def test_ls_lists_every_complete_snapshot_newest_first(jobs):
    doc = json.loads(ok("ls", str(jobs), "--json"))
    found = [(s["location"], s["kind"], s["checkpoint"], s["incremental"], s["family"]) for s in doc["snapshots"]]
    assert found == [
        (str(jobs / "own" / "v2"), "savepoint", None, True, "statectl"),  # shares its base's files
        (str(jobs / "own" / "base"), "savepoint", None, False, "statectl"),
        (str(jobs / "savepoints" / "savepoint-aa"), "savepoint", None, False, "flink"),
        (str(jobs / "flink-job" / "chk-5"), "checkpoint", 5, False, "flink"),
    ]
    for s in doc["snapshots"]:
        info = json.loads(ok("info", "--json", s["location"]))
        assert (s["savepoint_id"], s["created_at"], s["operators"]) == \
            (info["savepoint_id"], info["created_at"], len(info["operators"]))
        assert s["bytes"] == sum(o["bytes"] for o in info["operators"])
    assert doc["snapshots"][2]["created_at"] == "2026-02-01T00:00:00Z"
    (broken,) = doc["unreadable"]
    assert broken["location"] == str(jobs / "broken") and broken["reason"]

    table = ok("ls", str(jobs))
    assert table.splitlines()[0].strip() == f"4 snapshot(s) under {jobs}, newest first"
    assert f"not a readable snapshot: {jobs / 'broken'}: " in table


def test_snapshots_made_in_one_second_are_ordered_by_lineage_then_location(tmp_path):
    """Times have whole seconds. Within one: a savepoint derived from another is newer, so is
    a higher checkpoint number of the same job (not of another job); the rest by location."""
    root = tmp_path / "jobs"
    for job, number in (("job-b", 9), ("job-b", 10), ("job-b", 2)):
        shutil.copytree(FIXTURES / "int-hashmap-native" / "savepoint", root / job / f"chk-{number}")
    shutil.copytree(FIXTURES / "pojo-rocksdb-canonical" / "savepoint", root / "job-a" / "chk-3")
    base, derived = root / "savepoints" / "a-base", root / "savepoints" / "b-derived"
    shutil.copytree(FIXTURES / "long-rocksdb-canonical" / "savepoint", base)
    ok("modify", str(base), str(derived), "--rename", "lk-proc=proc")
    for metadata in root.glob("*/*/_metadata"):
        _at(metadata, "2026-03-01T00:00:00")

    doc = json.loads(ok("ls", str(root), "--json"))
    assert [s["location"] for s in doc["snapshots"]] == [str(root / p) for p in (
        "job-a/chk-3", "job-b/chk-10", "job-b/chk-9", "job-b/chk-2", "savepoints/b-derived", "savepoints/a-base")]
    assert {s["created_at"] for s in doc["snapshots"]} == {"2026-03-01T00:00:00Z"}
    done = statectl("info", "--json", str(root / "savepoints"))
    assert done.returncode == 0 and json.loads(done.stdout)["location"] == str(derived)


def test_reading_commands_open_the_newest_or_the_chosen_checkpoint(jobs):
    done = statectl("info", "--json", str(jobs))
    assert done.returncode == 0 and json.loads(done.stdout)["location"] == str(jobs / "own" / "v2")
    assert done.stderr.strip().startswith(f"note: using {jobs / 'own' / 'v2'} (savepoint, ")
    assert done.stderr.strip().endswith(f"the newest of 4 snapshot(s) under {jobs}")

    chosen = statectl("read", str(jobs / "flink-job"), "--uid", "lk-proc", "--checkpoint", "5",
                      "--format", "jsonl")
    assert chosen.returncode == 0
    assert chosen.stdout == ok("read", str(jobs / "flink-job" / "chk-5"), "--uid", "lk-proc", "--format", "jsonl")
    assert chosen.stderr.strip().startswith(f"note: using {jobs / 'flink-job' / 'chk-5'} (checkpoint 5, ")
    assert ok("validate", str(jobs / "flink-job")).splitlines()[-1].startswith(f"valid: {jobs / 'flink-job' / 'chk-5'} ")


def test_mistakes_are_one_line(jobs, tmp_path):
    def error(*args) -> str:
        done = statectl(*args)
        assert done.returncode == 1 and done.stdout == ""
        (line,) = done.stderr.strip().splitlines()
        return line

    assert error("read", str(jobs / "flink-job"), "--uid", "lk-proc", "--checkpoint", "7") == \
        f"error: {jobs / 'flink-job'}: no complete checkpoint chk-7 under it (statectl ls lists what is there)"
    assert error("info", str(jobs / "own" / "v2"), "--checkpoint", "1") == \
        f"error: {jobs / 'own' / 'v2'} is one snapshot: --checkpoint chooses among the snapshots under a folder"
    assert error("ls", str(tmp_path / "nothing")) == f"error: {tmp_path / 'nothing'}: no such directory"
    (tmp_path / "empty").mkdir()
    assert error("info", str(tmp_path / "empty")) == \
        f"error: {tmp_path / 'empty'}: no _metadata file, so not a savepoint (or a write that never finished)"


def test_a_jobs_retained_checkpoints(flink_snapshots):
    """The folder Flink keeps a job's retained incremental checkpoints in, as the job left it."""
    (checkpoint,) = flink_snapshots("2.3.0", [INCREMENTAL])
    job = checkpoint.path.parent
    doc = json.loads(ok("ls", str(job), "--json"))
    numbers = [s["checkpoint"] for s in doc["snapshots"]]
    assert numbers == sorted(numbers, reverse=True) and len(numbers) >= 2
    assert all(s["kind"] == "checkpoint" and s["incremental"] for s in doc["snapshots"])
    assert doc["snapshots"][0]["location"] == str(checkpoint.path)
    assert doc["unreadable"] == []
