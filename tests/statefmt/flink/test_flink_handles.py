"""Stream handles the dev fixtures lack: absolute files (a retained checkpoint's shared/
files) and file-merging segments, made by rewriting a fixture's relative file handles."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from statectl.statefmt.flink.handles import AbsoluteFile, SegmentFile
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, timers_table

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"


def utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def relative_handle(name: str, size: int) -> bytes:
    return b"\x06" + utf(name) + struct.pack(">q", size)


def rewrite(fixture: str, tmp: Path, make_handle) -> Path:
    """Copy *fixture*, move every stream file into tmp/shared and reference it with *make_handle*."""
    sp = tmp / "chk-1"  # a retained checkpoint: its files may lie in the job's shared/
    shutil.copytree(FIXTURES / fixture / "savepoint", sp)
    shared = tmp / "shared"
    shared.mkdir()
    meta = (sp / "_metadata").read_bytes()
    for f in sorted(sp.iterdir()):
        if f.name == "_metadata":
            continue
        old = relative_handle(f.name, f.stat().st_size)
        assert old in meta
        meta = meta.replace(old, make_handle(f, shared))
    (sp / "_metadata").write_bytes(meta)
    return sp


def absolute(f: Path, shared: Path) -> bytes:
    target = shared / f.name
    f.rename(target)
    return b"\x02" + struct.pack(">q", target.stat().st_size) + utf(f"file:{target}")


def segment(f: Path, shared: Path) -> bytes:
    merged = shared / "merged"
    data = f.read_bytes()
    with open(merged, "ab") as out:
        start = out.tell() + 7
        out.write(b"\xee" * 7 + data)
    f.unlink()
    return b"\x0f" + struct.pack(">qqi", start, len(data), 0) + utf(str(merged)) + utf(f"id-{f.name}")


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
