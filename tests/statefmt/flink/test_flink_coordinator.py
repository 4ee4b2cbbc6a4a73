"""The operator coordinator's state (a source's split enumerator checkpoint) as an operator
state named ``coordinator``: an unknown enumerator as (version, bytes), any bytes never
failing the state, a missing file one line."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import statectl
from statectl.statefmt.flink import coordinator as C
from support.cli_runner import error_line, statectl as run
from support.flink_metadata_edits import with_coordinator

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev" / "realworld-hashmap-canonical"
SOURCE = "file-source"


def frame(version: int, payload: bytes, serde: int = 1) -> bytes:
    """A source coordinator's state: serde version, enumerator serializer version, length, bytes."""
    return struct.pack(">iii", serde, version, len(payload)) + payload


def coordinator_rows(path) -> list[dict]:
    return [r["value"] for r in statectl.open_savepoint(str(path)).operator_state(SOURCE, "coordinator").to_pylist()]


def test_unknown_enumerator_is_its_version_and_bytes(tmp_path):
    path = with_coordinator(FIXTURE / "savepoint", tmp_path / "sp", SOURCE, frame(5, b"\x01\x02\x03"))
    assert coordinator_rows(path) == [{"version": 5, "bytes": b"\x01\x02\x03"}]
    out = run("info", str(path), "--json")
    op = next(op for op in json.loads(out.stdout)["operators"] if op["uid"] == SOURCE)
    assert [s["type"] for s in op["states"] if s["name"] == "coordinator"] == ["struct<version: int32, bytes: binary>"]


def test_an_enumerator_read_as_no_kafka_partitions_stays_bytes():
    assert C.parse(frame(1, bytes(4))) == (C.RAW, [{"version": 1, "bytes": bytes(4)}])


def test_state_of_another_coordinator_is_all_its_bytes(tmp_path):
    path = with_coordinator(FIXTURE / "savepoint", tmp_path / "sp", SOURCE, b"\x00\x07")
    assert coordinator_rows(path) == [{"version": None, "bytes": b"\x00\x07"}]


def test_read_without_state_still_reads_the_reader_splits():
    out = run("read", str(FIXTURE / "savepoint"), "--uid", SOURCE, "-f", "jsonl", "--engine", "local")
    assert out.returncode == 0, out.stderr
    assert all("split_id" in json.loads(line)["value"] for line in out.stdout.splitlines())


def test_missing_coordinator_file_is_one_line_and_the_rest_reads(tmp_path):
    import dataclasses

    from statectl.statefmt.flink.handles import RelativeFile
    from statectl.statefmt.flink.metadata import parse_metadata
    from statectl.statefmt.flink.metadata_write import encode_metadata

    path = with_coordinator(FIXTURE / "savepoint", tmp_path / "sp", SOURCE, None)
    meta = parse_metadata((path / "_metadata").read_bytes())
    ops = tuple(dataclasses.replace(op, coordinator=RelativeFile("gone", 176)) if op.uid == SOURCE else op
                for op in meta.operators)
    (path / "_metadata").write_bytes(encode_metadata(dataclasses.replace(meta, operators=ops)))
    out = run("read", str(path), "--uid", SOURCE, "--state", "coordinator", "-f", "jsonl", "--engine", "local")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    line = error_line(out, path)
    assert "file-source" in line and "coordinator" in line and "missing" in line
    assert len(statectl.open_savepoint(str(path)).operator_state(SOURCE, "SourceReaderState").to_pylist()) == 2


REAL = (FIXTURE / "savepoint" / "_metadata").read_bytes()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 3))
def test_any_bytes_parse_as_some_layout(data, version):
    """Garbled or truncated enumerator bytes: a layout's rows or (version, bytes), never an exception."""
    for state in (data, frame(version, data)):
        layout, rows = C.parse(state)
        assert layout in C.TYPES and (rows or layout == C.FILE_ENUMERATOR)


def test_truncated_file_enumerator_state_is_bytes():
    from statectl.statefmt.flink.metadata import parse_metadata

    state = next(op.coordinator.data for op in parse_metadata(REAL).operators if op.uid == SOURCE)
    assert C.parse(state)[0] == C.FILE_ENUMERATOR
    for cut in range(1, len(state)):
        layout, rows = C.parse(state[:cut])
        assert layout == C.RAW
