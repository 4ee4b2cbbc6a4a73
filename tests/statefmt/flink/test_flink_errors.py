"""Bad Flink savepoints end in one clear error line naming the file (and offset)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from statectl.statefmt.errors import (FlinkFormatError, MissingFileError, NotASavepointError, UnreadableStateError,
                                     UnsupportedFlinkFeature)
from statectl.statefmt.flink.metadata import is_flink_metadata, parse_metadata
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint
from support.flink_metadata_edits import edit_metadata, KEYED_HANDLE_AT, PROC_STREAM

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"


@pytest.fixture
def savepoint(tmp_path) -> Path:
    target = tmp_path / "sp"
    shutil.copytree(FIXTURES / "long-hashmap-canonical" / "savepoint", target)
    return target


def error_of(sp: Path, read=False) -> str:
    with pytest.raises((FlinkFormatError, UnsupportedFlinkFeature, UnreadableStateError, MissingFileError,
                        NotASavepointError)) as e:
        opened = open_flink_savepoint(sp)
        if read:
            keyed_table(opened.operator("lk-proc"))
    return str(e.value).replace(str(sp), "SP")


def test_magic_detection():
    data = (FIXTURES / "long-hashmap-canonical" / "savepoint" / "_metadata").read_bytes()
    assert is_flink_metadata(data[:4])
    assert not is_flink_metadata(b'{"fo')


def test_not_a_savepoint(tmp_path):
    assert error_of(tmp_path) == "SP: not a savepoint (no _metadata file)"


def test_bad_magic(savepoint):
    edit_metadata(savepoint, 0, b"\x00\x00\x00\x00")
    assert error_of(savepoint) == "SP/_metadata: not a Flink _metadata file (bad magic number)"


def test_unknown_version(savepoint):
    edit_metadata(savepoint, 4, struct.pack(">i", 7))
    assert error_of(savepoint) == "SP/_metadata: Flink _metadata version 7 is not supported (supported: 3 to 6)"


def test_truncated_metadata(savepoint):
    data = (savepoint / "_metadata").read_bytes()
    (savepoint / "_metadata").write_bytes(data[:300])
    assert error_of(savepoint) == "SP/_metadata: ends early: 688 more byte(s) needed, 89 left at offset 211"


def test_unknown_handle_type(savepoint):
    edit_metadata(savepoint, KEYED_HANDLE_AT, b"\x63")
    assert error_of(savepoint) == \
        "SP/_metadata: operator lk-proc subtask 0: unknown keyed state handle type 99 at offset 202"


def test_changelog_handle(savepoint):
    edit_metadata(savepoint, KEYED_HANDLE_AT, b"\x08")
    assert error_of(savepoint) == (
        "SP/_metadata: operator lk-proc subtask 0: changelog (ChangelogStateBackendHandle) state handles "
        "are not supported (a checkpoint of the changelog state backend)")


def test_missing_file(savepoint):
    """A missing stream fails only its operator's keyed part: the savepoint still opens."""
    (savepoint / PROC_STREAM).unlink()
    assert error_of(savepoint, read=True) == (
        f"operator lk-proc: its keyed state and timers cannot be read: SP/{PROC_STREAM}: file is missing "
        "(referenced by SP/_metadata)")


def test_short_file(savepoint):
    data = (savepoint / PROC_STREAM).read_bytes()
    (savepoint / PROC_STREAM).write_bytes(data[:-100])
    assert error_of(savepoint, read=True) == \
        f"operator lk-proc: its keyed state and timers cannot be read: SP/{PROC_STREAM}: 17735 bytes, _metadata says 17835"
    opened = open_flink_savepoint(savepoint)
    assert [op.label for op in opened.operators if op.unreadable] == ["lk-proc"]


def test_stream_ends_early(savepoint):
    """A stream cut inside its last key group, with _metadata's size agreeing: the decoder finds it."""
    data = (savepoint / PROC_STREAM).read_bytes()
    (savepoint / PROC_STREAM).write_bytes(data[:-100])
    meta = (savepoint / "_metadata").read_bytes()
    at = meta.index(PROC_STREAM.encode()) + len(PROC_STREAM)
    edit_metadata(savepoint, at, struct.pack(">q", len(data) - 100))
    assert error_of(savepoint, read=True) == \
        f"SP/{PROC_STREAM}: stream ends early in key group 74 at offset 17725"


def test_bad_state_id_in_stream(savepoint):
    sp = open_flink_savepoint(savepoint)
    handle = sp.operator("lk-proc").keyed_splits[0].handle
    first = next(o for o in handle.offsets if o)
    data = bytearray((savepoint / PROC_STREAM).read_bytes())
    data[first:first + 2] = b"\x00\x63"
    (savepoint / PROC_STREAM).write_bytes(bytes(data))
    assert error_of(savepoint, read=True) == \
        f"SP/{PROC_STREAM}: unknown state id 99 in key group 3 at offset {first}"


def test_metadata_parse_names_the_source():
    with pytest.raises(FlinkFormatError) as e:
        parse_metadata(b"\x49\x60\x67\x2d\x00\x00", "x/_metadata")
    assert str(e.value) == "x/_metadata: ends early: 4 more byte(s) needed, 2 left at offset 4"
