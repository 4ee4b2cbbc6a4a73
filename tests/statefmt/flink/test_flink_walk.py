"""The two walks over a canonical keyed stream's entries, compiled (statefmt/flink/kernels.py) and
plain Python for a few key groups (statefmt/flink/walk.py), give the same answer: every entry's
key group and extents, or the same error code, block, offset and state id, on random streams
cut and damaged anywhere and on the stream of a real Flink savepoint; and a key lookup in a
fresh process walks without numba."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from statectl.statefmt.flink import kernels
from statectl.statefmt.flink.kernels import walk_canonical
from statectl.statefmt.flink.savepoint import key_group_blocks, open_flink_savepoint, split_base
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.flink.streams import END_OF_KEY_GROUP, META_FOLLOWS
from statectl.statefmt.flink.walk import walk_small
from support.flink_expect import FIXTURES

N_STATES = 3


def block(key_group: int, states: list[tuple[int, list[tuple[bytes, bytes]]]], prefix: int) -> bytes:
    out = b""
    for sid, pairs in states:
        out += struct.pack(">H", sid)
        for i, (k, v) in enumerate(pairs):
            key = (key_group | (META_FOLLOWS if i == len(pairs) - 1 else 0)).to_bytes(prefix, "big") + k
            out += struct.pack(">i", len(key)) + key + struct.pack(">i", len(v)) + v
    return out + struct.pack(">H", END_OF_KEY_GROUP)


def same(data: bytes, blocks: list[tuple[int, int, int]], prefix: int) -> None:
    """The plain walk's answer is the compiled walk's, in one pass (each state's room reserved)
    and in two (the states' entries counted first: a walk too big to reserve room for)."""
    table = np.asarray(blocks, dtype=np.int64).reshape(-1, 3)
    args = (table, N_STATES, prefix, META_FOLLOWS, END_OF_KEY_GROUP)
    small, small_error = walk_small(data, *args)
    for room in (kernels.ONE_PASS_BYTES, 0):
        with mock.patch.object(kernels, "ONE_PASS_BYTES", room):
            compiled, compiled_error = walk_canonical(np.frombuffer(data, dtype=np.uint8), *args)
        agree(compiled, compiled_error, small, small_error)


def agree(compiled, compiled_error, small, small_error) -> None:
    assert (None if compiled_error is None else tuple(int(x) for x in compiled_error)) == small_error
    if small_error is None:
        assert sorted(compiled) == sorted(small)
        for sid in small:
            for a, b in zip(compiled[sid], small[sid]):
                assert a.dtype == b.dtype and a.tolist() == b.tolist()
    else:
        assert compiled is None and small is None


entries = st.lists(st.tuples(st.binary(max_size=6), st.binary(max_size=6)), min_size=1, max_size=4)
groups = st.lists(st.lists(st.tuples(st.integers(0, N_STATES - 1), entries), min_size=1, max_size=3),
                  min_size=0, max_size=4)


@settings(max_examples=150, deadline=None)
@given(groups=groups, prefix=st.sampled_from([1, 2]), damage=st.data())
def test_both_walks_agree_on_any_stream_cut_or_damaged(groups, prefix, damage):
    data, blocks = b"", []
    for key_group, states in enumerate(groups):
        part = block(key_group, states, prefix)
        blocks.append((key_group, len(data), len(data) + len(part)))
        data += part
    same(data, blocks, prefix)
    if not data:
        return
    at = damage.draw(st.integers(0, len(data) - 1))
    same(data[:at], blocks, prefix)  # cut: blocks run past the bytes
    flipped = data[:at] + bytes([data[at] ^ damage.draw(st.integers(1, 255))]) + data[at + 1:]
    same(flipped, blocks, prefix)
    same(data, [(kg, s, max(s, e - 1)) for kg, s, e in blocks], prefix)  # a block ends a byte early
    same(data + b"\x00", [(kg, s, e + 1) for kg, s, e in blocks], prefix)  # or late: bytes after its end mark


def test_both_walks_agree_on_a_real_flink_stream():
    fsp = open_flink_savepoint(FIXTURES / "long-rocksdb-canonical" / "savepoint")
    walked = 0
    for op in fsp.operators:
        for split in op.keyed_splits:
            handle = split.handle
            data = read_stream(split_base(split), handle.stream)
            blocks = key_group_blocks(handle, handle.stream.size, split.key_groups)
            same(data, blocks, 1 if split.max_parallelism <= 128 else 2)
            walked += len(blocks)
    assert walked > 0


@pytest.mark.parametrize("fixture", ["long-rocksdb-canonical", "long-rocksdb-native"])
def test_a_key_lookup_walks_without_numba(fixture):
    """`read --key` walks one key group, of a canonical stream or a native snapshot's SST files
    (statefmt/rocksdb/sstwalk.py): a fresh process answers without importing numba."""
    sp = FIXTURES / fixture / "savepoint"
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from statectl.cli.main import run; sys.argv = ['statectl', 'read', "
         f"{str(sp)!r}, '--uid', 'lk-proc', '--key', '9007199254740993', '--format', 'jsonl'];\n"
         "try:\n    run()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "STATECTL_HANDOFF": "off"})  # what this process imports
    assert probe.returncode == 0, probe.stderr
    *rows, loaded = probe.stdout.splitlines()
    assert len(rows) == 1 and rows[0].startswith('{"key":9007199254740993,"count":16,')
    assert loaded == "[]"
