"""Snappy-compressed snapshots (`execution.checkpointing.snapshot-compression`): a dev
fixture rewritten the way Flink compresses (each keyed key group its own framed stream;
operator state: a stream identifier per state, then one chunk per element) reads the same."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from statectl.statefmt.flink.handles import RelativeFile
from statectl.statefmt.flink.savepoint import (keyed_table, open_flink_savepoint, operator_state_table,
                                               timers_table)
from support.flink_metadata_edits import compress_keyed, framed, pack, replace

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
IDENTIFIER = b"\xff\x06\x00\x00sNaPpY"


def compress_operator(sp_dir: Path, meta: bytes, handle) -> bytes:
    stream: RelativeFile = handle.stream
    data = (sp_dir / stream.relative_path).read_bytes()
    (state,) = handle.states
    header_len = state.offsets[0]
    out = bytearray(data[:header_len])
    out[4] = 1  # usingStateCompression
    out += IDENTIFIER
    ends = list(state.offsets[1:]) + [len(data)]
    new_offsets = []
    for o, e in zip(state.offsets, ends):
        new_offsets.append(len(out))
        out += framed(data[o:e])[len(IDENTIFIER):]  # one chunk per element
    (sp_dir / stream.relative_path).write_bytes(bytes(out))
    name = stream.relative_path.encode()
    meta = meta.replace(pack(state.offsets), pack(new_offsets))
    return replace(meta, name + struct.pack(">q", len(data)), name + struct.pack(">q", len(out)))


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    plain_dir = FIXTURES / "long-hashmap-canonical" / "savepoint"
    target = tmp_path_factory.mktemp("compressed") / "sp"
    shutil.copytree(plain_dir, target)
    plain = open_flink_savepoint(plain_dir)
    meta = (target / "_metadata").read_bytes()
    for uid in ("lk-proc", "lk-win"):
        for split in plain.operator(uid).keyed_splits:
            meta = compress_keyed(target, meta, split.handle)
    for uid in ("lk-bcast", "lk-union-op"):
        for split in plain.operator(uid).operator_splits:
            meta = compress_operator(target, meta, split.handle)
    (target / "_metadata").write_bytes(meta)
    return plain, open_flink_savepoint(target)


def test_compressed_keyed_state_reads_the_same(pair):
    plain, compressed = pair
    for uid in ("lk-proc", "lk-win"):
        assert compressed.operator(uid).keyed_header.compressed
        assert keyed_table(compressed.operator(uid)) == keyed_table(plain.operator(uid))
        assert timers_table(compressed.operator(uid)) == timers_table(plain.operator(uid))
        assert keyed_table(plain.operator(uid)).num_rows > 0


def test_compressed_operator_state_reads_the_same(pair):
    plain, compressed = pair
    for uid, state in (("lk-bcast", "rules"), ("lk-union-op", "union-counts")):
        got = operator_state_table(compressed.operator(uid), state)
        assert got == operator_state_table(plain.operator(uid), state)
        assert got.num_rows > 0
