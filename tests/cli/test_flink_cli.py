"""Flink savepoints through `info`, `validate` and the write commands; bad input through
the CLI: one line naming the file (and offset), exit 1, no traceback."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from statectl.cli.output import human_bytes
from support.cli_runner import statectl
from support.flink_expect import FIXTURES, expected_of
from support.flink_metadata_edits import KEYED_HANDLE_AT, PROC_STREAM, edit_metadata
from support.cli_runner import error_line

LONG = FIXTURES / "long-hashmap-canonical" / "savepoint"
INLINE = FIXTURES / "int-hashmap-native" / "savepoint"


@pytest.fixture
def savepoint(tmp_path) -> Path:
    target = tmp_path / "sp"
    shutil.copytree(LONG, target)
    return target


def test_info_json_describes_every_operator_and_state():
    expected = expected_of("long-hashmap-canonical")
    doc = json.loads(statectl("info", "--json", str(LONG)).stdout)
    # the id of a Flink savepoint is derived from its _metadata (statefmt/flink/lineage.py)
    assert doc["savepoint_id"] == "flink-926ce037ca7cd2b42f9396d356d583fd" and doc["format_version"] == 6
    ops = {op["uid"]: op for op in doc["operators"]}
    assert set(ops) == set(expected["operators"])
    for uid, exp in expected["operators"].items():
        op = ops[uid]
        assert (op["operator_id"], op["name"], op["parallelism"], op["max_parallelism"], op["format"]) == \
            (exp["operator_id"], exp["name"], exp["parallelism"], exp["max_parallelism"], "flink")
        states = {s["name"]: s for s in op["states"]}
        for name, state in exp.get("keyed_state", {}).items():
            s = states[name]
            assert (s["scope"], s["kind"], s["ttl"]) == ("keyed", state["kind"].lower(), "ttl" in state)
            assert s["serializer"] == state.get("state_serializer", s["serializer"])
            assert s["bytes"] == op["bytes"] > 0  # every keyed state lives in the keyed streams
    proc = {s["name"]: s for s in ops["lk-proc"]["states"]}
    assert (proc["count"]["type"], proc["events"]["type"], proc["attrs"]["type"]) == \
        ("int64", "list<string>", "map<string, int64>")
    assert proc["count"]["serializer"] == "org.apache.flink.api.common.typeutils.base.LongSerializer"
    assert ops["lk-proc"]["keyed"]["key"] == [{"name": "key", "type": "int64"}]
    assert ops["lk-win"]["keyed"]["namespace_type"] == {"struct": [
        {"name": "start", "type": "int64", "nullable": True}, {"name": "end", "type": "int64", "nullable": True}]}
    rules = next(s for s in ops["lk-bcast"]["states"] if s["name"] == "rules")
    assert (rules["scope"], rules["kind"], rules["type"]) == ("operator", "broadcast", "string -> string")
    on_disk = sum(f.stat().st_size for f in LONG.iterdir() if f.name != "_metadata")
    assert doc["bytes"] == on_disk and doc["absolute_files"] == []


def test_info_sizes_count_inline_streams():
    doc = json.loads(statectl("info", "--json", str(INLINE)).stdout)
    proc = next(op for op in doc["operators"] if op["uid"] == "ik-proc")
    assert proc["files"] == 0 and all(s["bytes"] > 0 for s in proc["states"])


def test_info_text():
    out = statectl("info", str(LONG)).stdout
    assert "Flink operators" in out
    assert "lk-snk: Writer" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["lk-proc", "ttl_seen"] not in [line[:2] for line in lines]  # no TTL state in this fixture
    count = next(line for line in lines if line[:2] == ["lk-proc", "count"])
    assert count[2:5] == ["value", "org.apache.flink.api.common.typeutils.base.LongSerializer", "int64"]


def test_validate_checks_sizes_and_says_there_are_no_checksums(savepoint):
    ok = statectl("validate", str(savepoint))
    assert ok.returncode == 0
    files = [f.stat().st_size for f in savepoint.iterdir() if f.name != "_metadata"]
    assert ok.stdout.splitlines() == [
        "note: Flink savepoint: its files have no checksums, so only their presence and sizes were checked "
        "(--deep decodes every stream)",
        f"valid: {savepoint} ({len(files)} file(s), {human_bytes(sum(files))} checked)"]
    (savepoint / PROC_STREAM).write_bytes((savepoint / PROC_STREAM).read_bytes() + b"x")
    bad = statectl("validate", "--json", str(savepoint))
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["problems"] == [
        f"operator lk-proc: {savepoint}/{PROC_STREAM}: size is 17836 bytes, _metadata records 17835 "
        "(truncated or replaced file)"]


def test_bootstrapping_statectl_format_on_a_flink_base_is_refused(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"operators:\n  - uid: a\n    keyed: {{key: k, input: {tmp_path}/in.csv, states: [{{name: v, kind: value, column: x}}]}}\n")
    (tmp_path / "in.csv").write_text("k,x\n1,2\n")
    result = statectl("bootstrap", str(tmp_path / "out"), "--base", str(LONG), "--spec", str(spec))
    assert error_line(result, LONG) == (
        "error: SP is a Flink savepoint and the output would be statectl's canonical: operator(s) lk-snk, "
        "lk-proc, lk-rules-src, lk-union-op, lk-win, lk-src, lk-bcast not in the spec cannot be shallow "
        "copies of it; write --format flink, or give them in the spec")
    assert not (tmp_path / "out").exists()


def test_truncated_metadata(savepoint):
    data = (savepoint / "_metadata").read_bytes()
    (savepoint / "_metadata").write_bytes(data[:300])
    assert error_line(statectl("info", str(savepoint)), savepoint) == \
        "error: SP/_metadata: ends early: 688 more byte(s) needed, 89 left at offset 211"


def test_corrupt_metadata(savepoint):
    edit_metadata(savepoint, 20, b"\xff\xff")
    assert error_line(statectl("read", str(savepoint), "--uid", "lk-proc"), savepoint) == \
        "error: SP/_metadata: impossible number of operator states: -65529 at offset 20"


def test_unknown_handle(savepoint):
    edit_metadata(savepoint, KEYED_HANDLE_AT, b"\x63")
    assert error_line(statectl("info", str(savepoint)), savepoint) == \
        "error: SP/_metadata: operator lk-proc subtask 0: unknown keyed state handle type 99 at offset 202"


def test_unknown_serializer(savepoint):
    """An unknown serializer fails only lk-proc's keyed part: info lists it, reading it is one line."""
    stream = savepoint / PROC_STREAM
    stream.write_bytes(stream.read_bytes().replace(b"LongSerializer$LongSerializerSnapshot",
                                                   b"LongSerializer$LongSerializerSnapshoX"))
    info = statectl("info", str(savepoint))
    assert info.returncode == 0 and "LongSerializerSnapshoX" in info.stdout
    assert error_line(statectl("read", str(savepoint), "--uid", "lk-proc"), savepoint) == (
        f"error: operator lk-proc: its keyed state and timers cannot be read: SP/{PROC_STREAM}: serializer "
        "snapshot org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshoX (version 3) "
        "at offset 9 is not known")


def test_missing_file(savepoint):
    """A missing stream: info lists the savepoint, validate and reading the part name the file."""
    (savepoint / PROC_STREAM).unlink()
    missing = f"SP/{PROC_STREAM}: file is missing (referenced by SP/_metadata)"
    assert statectl("info", str(savepoint)).returncode == 0
    report = statectl("validate", "--json", str(savepoint))
    assert report.returncode == 1
    assert [p.replace(str(savepoint), "SP") for p in json.loads(report.stdout)["problems"]] == \
        [f"operator lk-proc: SP/{PROC_STREAM}: file is missing"]
    assert error_line(statectl("read", str(savepoint), "--uid", "lk-proc"), savepoint) == \
        f"error: operator lk-proc: its keyed state and timers cannot be read: {missing}"


def test_not_a_savepoint(tmp_path):
    (tmp_path / "data.txt").write_text("x")
    assert error_line(statectl("info", str(tmp_path)), tmp_path) == \
        "error: SP: no _metadata file, so not a savepoint (or a write that never finished)"


@pytest.mark.slow
def test_stream_ending_early_is_reported_from_the_spark_task(savepoint):
    """_metadata agrees with the cut file's size, so only decoding (in an executor) finds it."""
    data = (savepoint / PROC_STREAM).read_bytes()
    (savepoint / PROC_STREAM).write_bytes(data[:-100])
    meta = (savepoint / "_metadata").read_bytes()
    edit_metadata(savepoint, meta.index(PROC_STREAM.encode()) + len(PROC_STREAM), struct.pack(">q", len(data) - 100))
    for engine in ("spark", "local"):  # the same line from an executor and from this process
        result = statectl("read", str(savepoint), "--uid", "lk-proc", "-f", "jsonl", "--engine", engine)
        assert error_line(result, savepoint) == \
            f"error: SP/{PROC_STREAM}: stream ends early in key group 74 at offset 17725"


def test_read_key_filter():
    """--key: a tuple key as a JSON array, repeatable; exactly those keys' rows."""
    sp = FIXTURES / "tuple-rocksdb-native" / "savepoint"
    counts = expected_of("tuple-rocksdb-native")["operators"]["tk-proc"]["keyed_state"]["count"]["values"]
    result = statectl("read", str(sp), "--uid", "tk-proc", "--state", "count",
                      "--key", '["ap-süd", 18]', "--key", '["sa", 4]', "-f", "jsonl")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((r["f0"], r["f1"], r["count"]) for r in rows) == \
        [("ap-süd", 18, counts["(ap-süd,18)"]), ("sa", 4, counts["(sa,4)"])]


def test_read_key_filter_of_a_wrong_shape_is_one_line():
    result = statectl("read", str(LONG), "--uid", "lk-proc", "--key", "abc")
    assert error_line(result, LONG) == ("error: --key 'abc': not a JSON value (a key of operator lk-proc "
                                        "is int64; a tuple key is written [\"a\", 1])")
