"""Stream handles the dev fixtures lack: absolute files (a retained checkpoint's shared/
files) and file-merging segments, made by rewriting a fixture's relative file handles."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from statectl.statefmt.flink.handles import AbsoluteFile, SegmentFile
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, timers_table
from support.flink_metadata_edits import absolute, rewrite, segment

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"


def utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


@pytest.mark.parametrize("fixture", ["long-hashmap-canonical", "long-rocksdb-native"])
@pytest.mark.parametrize("make_handle, handle_type", [(absolute, AbsoluteFile), (segment, SegmentFile)])
def test_moved_streams_read_the_same(tmp_path, fixture, make_handle, handle_type):
    plain = open_flink_savepoint(FIXTURES / fixture / "savepoint")
    moved = open_flink_savepoint(rewrite(fixture, tmp_path, make_handle))
    assert list(moved.location.list_files()) == ["_metadata"]
    for uid in ("lk-proc", "lk-win"):
        split = moved.operator(uid).keyed_splits[0]
        streams = [split.handle.stream] if hasattr(split.handle, "stream") else \
            [split.handle.meta] + [s for _, s in split.handle.files]
        assert all(isinstance(s, handle_type) for s in streams)
        expected = keyed_table(plain.operator(uid))
        assert expected.num_rows > 0
        assert keyed_table(moved.operator(uid)) == expected
        assert timers_table(moved.operator(uid)) == timers_table(plain.operator(uid))
