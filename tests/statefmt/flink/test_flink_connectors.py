"""Connector state of the realworld Flink 2.3 fixtures as typed tables: the FileSource
reader splits, the FileSink writer's buckets and the committer's pending part files,
against what Flink's own serializers read (`expected.json`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import statectl
from support.cli_runner import error_line, statectl as run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev"
NAMES = ("realworld-hashmap-canonical", "realworld-rocksdb-native")
SOURCE, WRITER, COMMITTER = "file-source", "file-sink", "Sink Committer: file-sink"
SPLIT_FRAME = bytes.fromhex("00000001000000a0000a")  # version 1, 160 bytes, split id of 10 characters


def expected(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text())["operators"]


def rows(path, uid: str, state: str) -> list[dict]:
    return statectl.open_savepoint(str(path)).operator_state(uid, state).to_pylist()


def job_dir(name: str) -> str:
    return f"/tmp/rw-fixwork/jobs/{name}"


@pytest.mark.parametrize("name", NAMES)
def test_info_lists_connector_states_with_their_types(name):
    out = run("info", str(FIXTURES / name / "savepoint"), "--json")
    assert out.returncode == 0, out.stderr
    states = {(op["uid"], s["name"]): s for op in json.loads(out.stdout)["operators"]
              for s in op["states"] if s["scope"] == "operator"}
    assert states[(SOURCE, "SourceReaderState")]["type"].startswith(
        "struct<version: int32, split_id: string, path: string, offset: int64")
    assert "bucket_id: string, bucket_path: string" in states[(WRITER, "writer_raw_states")]["type"]
    assert "pending_path: string, pending_size: int64" in \
        states[(COMMITTER, "streaming_committer_raw_states")]["type"]


@pytest.mark.parametrize("name", NAMES)
def test_file_source_splits_are_flinks(name):
    want = expected(name)[SOURCE]["expected"]["reader_splits_per_subtask (Flink's FileSourceSplitSerializer)"]
    got = rows(FIXTURES / name / "savepoint", SOURCE, "SourceReaderState")
    assert len(got) == sum(len(v) for v in want.values())
    splits = [r["value"] for r in got]
    flat = [s for sub in sorted(want) for s in want[sub]]
    for value, w in zip(splits, flat):
        assert value["version"] == 1
        assert value["path"] == f"file:{job_dir(name)}/input/{w['file']}"
        assert (value["offset"], value["length"], value["file_size"]) == \
            (w["split_offset"], w["split_length"], w["file_size"])
        assert (value["reader_offset"], value["reader_records_after_offset"]) == \
            (w["reader_position"]["offset"], w["reader_position"]["records_after_offset"])
        assert value["hostnames"] == []


@pytest.mark.parametrize("name", NAMES)
def test_file_sink_writer_buckets_are_flinks(name):
    want = expected(name)[WRITER]["expected"]["writer_buckets_per_subtask (bucket id = input file name)"]
    got = rows(FIXTURES / name / "savepoint", WRITER, "writer_raw_states")
    assert [r["value"]["bucket_id"] for r in got] == [b for sub in sorted(want) for b in want[sub]]
    out = f"{job_dir(name)}/sink-output"
    for r in got:
        v = r["value"]
        assert v["version"] == 3
        assert v["bucket_path"] == f"file:{out}/{v['bucket_id']}"
        assert v["in_progress_path"] == "file:" + v["resumable_target"]
        assert v["resumable_target"].startswith(f"{out}/{v['bucket_id']}/part-")
        name_part = v["resumable_target"].rsplit("/", 1)[1]
        assert v["resumable_temp"].startswith(f"{out}/{v['bucket_id']}/.{name_part}.inprogress.")
        assert v["resumable_offset"] > 0 and v["resumable_raw"] is None


@pytest.mark.parametrize("name", NAMES)
def test_committer_holds_each_writers_rolled_part_file(name):
    got = [r["value"] for r in rows(FIXTURES / name / "savepoint", COMMITTER, "streaming_committer_raw_states")]
    assert [(v["subtask_id"], v["checkpoint_id"], v["request_state"]) for v in got] == \
        [(0, 1, "RECEIVED"), (1, 1, "RECEIVED")]
    for v in got:
        assert v["pending_path"] == "file:" + v["commit_target"]
        assert v["pending_size"] == v["commit_offset"] > 4096  # rolled at 4 kb
        assert v["pending_path"].endswith("-0") and v["bucket_id"] in v["pending_path"]


def test_read_command_gives_the_splits():
    out = run("read", str(FIXTURES / NAMES[0] / "savepoint"), "--uid", SOURCE, "-f", "jsonl", "--engine", "local")
    assert out.returncode == 0, out.stderr
    got = [json.loads(line)["value"] for line in out.stdout.splitlines()]
    assert [(v["path"].rsplit("/", 1)[1], v["reader_records_after_offset"]) for v in got] == \
        [("invoices-2024-11-04.txt", 154), ("invoices-2024-11-02.txt", 123)]


def test_spark_reads_the_same_splits(spark):
    path = str(FIXTURES / NAMES[1] / "savepoint")
    local = [r["value"] for r in rows(path, SOURCE, "SourceReaderState")]
    df = statectl.open_savepoint(path, spark=spark).operator_state(SOURCE, "SourceReaderState")
    remote = [r["value"].asDict(recursive=True) for r in df.collect()]
    assert sorted(remote, key=lambda v: v["split_id"]) == sorted(local, key=lambda v: v["split_id"])


def _copy_with(tmp_path: Path, old: bytes, new: bytes, count: int) -> Path:
    """A copy of the hashmap fixture with *old* replaced by *new* in *count* stream files."""
    dst = tmp_path / "sp"
    shutil.copytree(FIXTURES / NAMES[0] / "savepoint", dst)
    done = 0
    for f in sorted(dst.iterdir()):
        data = f.read_bytes()
        if old in data and done < count:
            f.write_bytes(data.replace(old, new, 1))
            done += 1
    assert done == count
    return dst


def test_damaged_frame_fails_the_state_in_one_line_and_the_rest_reads(tmp_path):
    broken = SPLIT_FRAME[:4] + (0x1000).to_bytes(4, "big") + SPLIT_FRAME[8:]  # a length past the element
    path = _copy_with(tmp_path, SPLIT_FRAME, broken, 1)
    out = run("read", str(path), "--uid", SOURCE, "--state", "SourceReaderState", "-f", "jsonl", "--engine", "local")
    assert out.returncode != 0
    line = error_line(out, path)

    assert "operator file-source" in line and "SourceReaderState" in line and "damaged" in line
    assert "Traceback" not in out.stderr
    assert [r["value"]["bucket_id"] for r in rows(path, WRITER, "writer_raw_states")] == \
        ["invoices-2024-11-04", "invoices-2024-11-02", "invoices-2024-11-03"]
    info = run("info", str(path))
    assert info.returncode == 0 and "SourceReaderState" in info.stdout


def test_unknown_connector_split_comes_out_as_version_and_bytes(tmp_path):
    other = (7).to_bytes(4, "big") + SPLIT_FRAME[4:]  # a split serializer version no FileSource writes
    path = _copy_with(tmp_path, SPLIT_FRAME, other, 1)
    got = rows(path, SOURCE, "SourceReaderState")
    assert sorted((r["value"]["version"], len(r["value"]["bytes"])) for r in got) == [(1, 160), (7, 160)]
    assert sorted(r["value"]["bytes"][:12] for r in got) == \
        [bytes.fromhex("000a") + b"0000000003", bytes.fromhex("000a") + b"0000000004"]


# --- the split enumerator's checkpoint (the source's coordinator state) ---------------------

@pytest.mark.parametrize("name", NAMES)
def test_coordinator_state_names_the_files_not_yet_assigned(name):
    want = expected(name)[SOURCE]["expected"]
    got = [r["value"] for r in rows(FIXTURES / name / "savepoint", SOURCE, "coordinator")]
    assert [v["path"].rsplit("/", 1)[1] for v in got] == want["coordinator_state_names_files (pending splits)"]
    assert {(v["version"], v["entry"], v["reader_offset"], v["offset"]) for v in got} == \
        {(1, "pending split", None, 0)}
    assert all(v["length"] == v["file_size"] > 0 for v in got)


@pytest.mark.parametrize("name", NAMES)
def test_info_lists_the_coordinator_state(name):
    out = run("info", str(FIXTURES / name / "savepoint"), "--json")
    assert out.returncode == 0, out.stderr
    op = next(op for op in json.loads(out.stdout)["operators"] if op["uid"] == SOURCE)
    state = next(s for s in op["states"] if s["name"] == "coordinator")
    size = expected(name)[SOURCE]["expected"]["coordinator_state_bytes"]
    assert (state["kind"], state["scope"], state["bytes"]) == ("coordinator", "operator", size)
    assert state["type"].startswith("struct<version: int32, entry: string, split_id: string, path: string")


def test_sql_reads_the_coordinator_state(spark):
    sp = statectl.open_savepoint(str(FIXTURES / NAMES[1] / "savepoint"), spark=spark)
    got = sp.sql("SELECT value.path, value.entry FROM `file-source.coordinator` ORDER BY value.path").collect()
    assert [(r[0].rsplit("/", 1)[1], r[1]) for r in got] == \
        [("invoices-2024-11-02.txt", "pending split"), ("invoices-2024-11-03.txt", "pending split")]
