"""Damaged Flink savepoints: every offset, count and length is checked against what it points
into before anything is read or allocated; a read never comes back short without an error;
`_metadata` is parsed to its last byte; a symlinked root cannot lead out; a non-file where a
file should be says so. Each case is one line, no traceback, the savepoint otherwise listed.

Built by damaging copies of the dev fixture `long-hashmap-canonical` (lk-proc's subtask 0
stream has key groups 0..85, the first holding data is key group 3 at offset 4257).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from support.cli_runner import statectl_process
from statectl.statefmt.errors import FlinkFormatError, UnsafeReferenceError
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.resolve import resolve_reference
from statectl.statefmt.formats import load

FIXTURE = Path(__file__).parents[2] / "fixtures" / "flink-dev" / "long-hashmap-canonical" / "savepoint"
PROC_STREAM = "bc780fd0-df7b-44c3-82d9-5de05e45083a"  # lk-proc subtask 0, 17835 bytes
OFFSETS_AT = 0xCA + 9  # lk-proc subtask 0's key-group offsets in _metadata (type byte, start, count)


@pytest.fixture
def sp(tmp_path) -> Path:
    target = tmp_path / "sp"
    shutil.copytree(FIXTURE, target)
    return target


def set_offset(sp: Path, index: int, value: int) -> None:
    data = bytearray((sp / "_metadata").read_bytes())
    struct.pack_into(">q", data, OFFSETS_AT + 8 * index, value)
    (sp / "_metadata").write_bytes(bytes(data))


def offset(sp: Path, index: int) -> int:
    return struct.unpack_from(">q", (sp / "_metadata").read_bytes(), OFFSETS_AT + 8 * index)[0]


def one_line(result, sp: Path) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0].replace(str(sp), "SP")


def problems(cli, sp: Path) -> list[str]:
    report = cli("validate", "--json", str(sp))
    assert report.returncode == 1, report.stdout
    return [p.replace(str(sp), "SP") for p in json.loads(report.stdout)["problems"]]


@pytest.mark.parametrize("value", [1 << 62, 1 << 32, -5])
def test_a_key_group_offset_outside_its_stream(cli, sp, value):
    assert offset(sp, 3) == 4257
    set_offset(sp, 3, value)
    why = (f"SP/_metadata: operator lk-proc subtask 0: key group 3's offset {value} lies outside "
           "its stream of 17835 bytes")
    info = cli("info", str(sp))
    assert info.returncode == 0 and "Traceback" not in info.stderr  # the rest of the savepoint lists
    assert problems(cli, sp) == [f"operator lk-proc: keyed state: {why}"]
    assert one_line(cli("read", str(sp), "--uid", "lk-proc"), sp) == \
        f"error: operator lk-proc: its keyed state and timers cannot be read: {why}"
    assert cli("read", str(sp), "--uid", "lk-bcast").returncode == 0


def test_key_group_offsets_out_of_order(sp):
    present = [i for i in range(86) if offset(sp, i)]
    set_offset(sp, present[1], offset(sp, present[2]) + 100)
    [part] = load(sp).operator("lk-proc").unreadable
    assert part.damaged and "comes before the previous key group's" in part.reason


def test_bytes_no_key_group_accounts_for(sp):
    """The next group's offset moved 2 bytes on: the key group before it ends 2 bytes short."""
    present = [i for i in range(86) if offset(sp, i)]
    i, j = present[0], present[1]
    set_offset(sp, j, offset(sp, j) + 2)
    fsp = open_flink_savepoint(sp)
    from statectl.statefmt.flink.savepoint import keyed_table
    with pytest.raises(FlinkFormatError, match=rf"key group {i} ends at offset \d+, 2 byte\(s\) before"):
        keyed_table(fsp.operator("lk-proc"))


def test_operator_state_offset_outside_its_stream(cli, sp):
    data = bytearray((sp / "_metadata").read_bytes())
    at = data.index(b"union-counts") + len(b"union-counts") + 1  # the name, then the mode byte
    assert struct.unpack_from(">i", data, at)[0] == 4  # its four elements' offsets follow
    struct.pack_into(">q", data, at + 4, 1 << 32)
    (sp / "_metadata").write_bytes(bytes(data))
    union = load(sp).operator("lk-union-op")
    [part] = union.unreadable
    assert part.part == "union-counts" and part.damaged
    assert f"operator state 'union-counts': offset {1 << 32} lies outside its stream of" in part.reason
    line = one_line(cli("read", str(sp), "--uid", "lk-union-op", "--state", "union-counts"), sp)
    assert line.startswith("error: operator lk-union-op: its operator state 'union-counts' cannot be read: ")


@pytest.mark.parametrize("cut", [1, 10, 700])
def test_metadata_cut_short_in_its_trailer(cli, sp, cut):
    data = (sp / "_metadata").read_bytes()
    (sp / "_metadata").write_bytes(data[:-cut])
    line = one_line(cli("info", str(sp)), sp)
    assert line.startswith("error: SP/_metadata: its checkpoint properties are cut short or damaged")
    assert cli("validate", str(sp)).returncode == 1


def test_metadata_with_bytes_after_its_trailer(cli, sp):
    data = (sp / "_metadata").read_bytes()
    (sp / "_metadata").write_bytes(data + b"\x00\x01")
    assert one_line(cli("info", str(sp)), sp) == \
        f"error: SP/_metadata: 2 byte(s) after the checkpoint properties at offset {len(data)}"


# A Java serialization stream's magic and version, then TC_OBJECT and TC_CLASSDESC with the class's name.
PROPERTIES = b"org.apache.flink.runtime.checkpoint.CheckpointProperties"
JAVA_STREAM = b"\xac\xed\x00\x05"
PROPERTIES_OBJECT = JAVA_STREAM + b"\x73\x72" + struct.pack(">H", len(PROPERTIES)) + PROPERTIES


def test_metadata_parsed_to_its_last_byte():
    """Every dev fixture's operators end exactly where Flink's Java-serialized CheckpointProperties
    begin (found in the bytes by the one Java serialization stream they hold, not by the parser),
    and the parser's trailer is that object, to the file's last byte."""
    fixtures = sorted(FIXTURE.parent.parent.glob("*/savepoint"))
    assert len(fixtures) == 7
    for fixture in fixtures:
        data = (fixture / "_metadata").read_bytes()
        meta = parse_metadata(data, str(fixture))
        assert data.count(JAVA_STREAM) == 1, fixture
        assert meta.trailer == data[data.index(PROPERTIES_OBJECT):], fixture
        assert len(meta.operators) == 7, fixture  # Psrc, Punion-op, Prules-src, Pbcast, Pproc, Pwin, Psnk


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_non_file_where_a_stream_should_be(sp, kind):
    (sp / PROC_STREAM).unlink()
    if kind == "directory":
        (sp / PROC_STREAM).mkdir()
    else:
        os.mkfifo(sp / PROC_STREAM)  # opening it would block: it must never be opened
    what = "a directory, not a file" if kind == "directory" else "not a regular file"
    result = statectl_process("read", str(sp), "--uid", "lk-proc", timeout=120)
    assert one_line(result, sp) == (
        f"error: operator lk-proc: its keyed state and timers cannot be read: SP/{PROC_STREAM}: {what}, "
        "referenced by SP/_metadata as a stream of 17835 bytes")
    report = statectl_process("validate", str(sp), timeout=120)
    assert report.returncode == 1 and f"SP/{PROC_STREAM}: not a file" in report.stdout.replace(str(sp), "SP")


def test_a_symlinked_shared_folder_cannot_lead_out(tmp_path):
    job, elsewhere = tmp_path / "job", tmp_path / "elsewhere"
    (job / "chk-7").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "data").write_bytes(b"x")
    (job / "shared").symlink_to(elsewhere)
    with pytest.raises(UnsafeReferenceError, match="leads out of the savepoint"):
        resolve_reference(job / "chk-7", str(job / "shared" / "data"), [job / "shared"])
    (job / "shared").unlink()
    (job / "shared").mkdir()
    (job / "shared" / "data").write_bytes(b"x")
    assert resolve_reference(job / "chk-7", str(job / "shared" / "data"), [job / "shared"]).path.endswith(
        "shared/data")


def test_a_string_length_of_2_to_the_35_from_a_spark_task(cli, sp):
    """A value's string length far past its bytes: one line naming the stream and the offset,
    from the Spark task that decodes it, nothing allocated for it first."""
    data = bytearray((sp / PROC_STREAM).read_bytes())
    at = data.index(b"\x10view/impression")
    data[at:at + 5] = b"\xff\xff\xff\xff\x07"
    (sp / PROC_STREAM).write_bytes(bytes(data))
    for engine in ("spark", "local"):
        line = one_line(cli("read", str(sp), "--uid", "lk-proc", "--engine", engine), sp)
        assert line.startswith(f"error: SP/{PROC_STREAM}: string of ")
        assert line.endswith(f"runs past the end ({len(data) - at - 5} bytes left) at offset {at + 5}")


def test_decoder_surprises_are_one_line_naming_the_split(cli, sp):
    """Bytes a decoder's own checks do not name end as one line naming the operator, subtask
    and key groups: here a map state's user key (a String) made null."""
    data = bytearray((sp / PROC_STREAM).read_bytes())
    data[data.index(b"\x11label:engagement")] = 0  # StringValue length 0: null
    (sp / PROC_STREAM).write_bytes(bytes(data))
    split = open_flink_savepoint(sp).operator("lk-proc").keyed_splits[0]
    lines = {one_line(cli("read", str(sp), "--uid", "lk-proc", "--engine", e), sp) for e in ("spark", "local")}
    assert lines == {(f"error: SP: operator {split.operator_id} subtask 0 key groups {split.key_groups[0]}-"
                    f"{split.key_groups[1]}: the state cannot be decoded (ArrowInvalid: Map cannot contain "
                    "NULL valued keys)")}
