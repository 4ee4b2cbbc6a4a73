"""The compiled walk over canonical keyed streams (statefmt/flink/kernels.py), on streams
written here as Flink's full snapshots write them: per key group, a state id, that
state's entries (int key length, key with its key-group prefix, int value length, value;
bit 0x80 of the last entry's first key byte set), the next state id, ..., 0xFFFF."""

from __future__ import annotations

import struct
import subprocess
import sys

import numpy as np
import pytest

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.headers import KeyedHeader, StateMeta
from statectl.statefmt.flink.streams import scan_canonical
from statectl.statefmt.flink.types import Buf
from support.flink_expect import FIXTURES


def entry(key_group: int, key: bytes, value: bytes, last: bool) -> bytes:
    k = bytes([key_group | (0x80 if last else 0)]) + key
    return struct.pack(">i", len(k)) + k + struct.pack(">i", len(value)) + value


def state(sid: int, key_group: int, pairs: list[tuple[bytes, bytes]]) -> bytes:
    return struct.pack(">H", sid) + b"".join(
        entry(key_group, k, v, i == len(pairs) - 1) for i, (k, v) in enumerate(pairs))


END = b"\xff\xff"
HEADER = KeyedHeader(6, False, T.String(), (StateMeta("a", "value", T.Scalar("long")),
                                             StateMeta("b", "value", T.Scalar("long"))), 0)
SOURCE = "s/stream"


def stream() -> tuple[bytes, list[tuple[int, int, int]]]:
    g5 = state(0, 5, [(b"k1", b"v-1"), (b"key2", b"")]) + state(1, 5, [(b"k3", b"value3")]) + END
    g6 = state(1, 6, [(b"", b"v")]) + END
    return g5 + g6, [(5, 0, len(g5)), (6, len(g5), len(g5) + len(g6))]


def test_offsets_of_every_entry():
    data, blocks = stream()
    found = scan_canonical(Buf(data, SOURCE), HEADER, blocks, 1)
    assert sorted(found) == [0, 1]
    keys = {sid: [data[s:e] for s, e in zip(r.key_starts, r.key_ends)] for sid, r in found.items()}
    values = {sid: [data[s:e] for s, e in zip(r.value_starts, r.value_ends)] for sid, r in found.items()}
    assert keys == {0: [b"k1", b"key2"], 1: [b"k3", b""]}
    assert values == {0: [b"v-1", b""], 1: [b"value3", b"v"]}
    assert found[0].key_groups.tolist() == [5, 5] and found[1].key_groups.tolist() == [5, 6]


def test_every_cut_is_one_error_line():
    """Each block cut short at every length: an error naming the key group and an offset inside
    the block, never a crash or rows read past the cut."""
    data, blocks = stream()
    for kg, start, end in blocks:
        for cut in range(start, end):
            cut_blocks = [b for b in blocks if b[0] < kg] + [(kg, start, cut)]
            with pytest.raises(FlinkFormatError) as e:
                scan_canonical(Buf(data[:cut], SOURCE), HEADER, cut_blocks, 1)
            message = str(e.value)
            assert message.startswith(f"{SOURCE}: stream ends early in key group {kg} at offset ")
            assert start <= int(message.rsplit(" ", 1)[1]) <= cut


def test_error_offsets_count_from_the_stream_start():
    data, blocks = stream()
    cut = blocks[1][1] + 5  # inside key group 6's first entry's length
    with pytest.raises(FlinkFormatError) as e:
        scan_canonical(Buf(data[:cut], SOURCE, base=1000), HEADER, [(5, 0, blocks[0][2]), (6, blocks[1][1], cut)], 1)
    assert str(e.value) == f"{SOURCE}: stream ends early in key group 6 at offset {1000 + blocks[1][1] + 2}"


def test_unknown_state_id():
    data, blocks = stream()
    bad = data[:blocks[1][1]] + b"\x00\x07" + data[blocks[1][1] + 2:]
    with pytest.raises(FlinkFormatError) as e:
        scan_canonical(Buf(bad, SOURCE), HEADER, blocks, 1)
    assert str(e.value) == f"{SOURCE}: unknown state id 7 in key group 6 at offset {blocks[1][1]}"


def test_a_block_past_the_end_of_the_bytes():
    """Offsets from a corrupt _metadata may point past the bytes read: never read there."""
    data, blocks = stream()
    with pytest.raises(FlinkFormatError) as e:
        scan_canonical(Buf(data[:20], SOURCE), HEADER, [(5, 0, 10_000)], 1)
    assert str(e.value).startswith(f"{SOURCE}: stream ends early in key group 5 at offset ")


def test_a_key_shorter_than_its_prefix():
    data = struct.pack(">H", 0) + struct.pack(">i", 0) + struct.pack(">i", 0) + END
    with pytest.raises(FlinkFormatError) as e:
        scan_canonical(Buf(data, SOURCE), HEADER, [(0, 0, len(data))], 1)
    assert str(e.value) == f"{SOURCE}: stream ends early in key group 0 at offset 2"


def test_no_blocks():
    assert scan_canonical(Buf(b"", SOURCE), HEADER, [], 1) == {}


def test_info_does_not_load_numba():
    """The compiled walks are for reading state: describing a savepoint (info, validate) does
    not import numba, nor pay its start-up."""
    sp = FIXTURES / "long-rocksdb-canonical" / "savepoint"
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from statectl.statefmt.flink.savepoint import open_flink_savepoint; "
         f"ops = open_flink_savepoint({str(sp)!r}).operators; "
         "print(len(ops), sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))"],
        capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["7", "[]"]


def test_rocksdb_entries_interleaved_and_decoded():
    """A native RocksDB subtask's column family read as one joined bytes + lengths gives
    the very entries of entries(), and their key groups from the prefixes."""
    from statectl.statefmt.flink.rocksdb_native import open_rocksdb_snapshot
    from statectl.statefmt.flink.streams import raw_from_interleaved
    from support.flink_expect import native_snapshots

    files = native_snapshots("long-rocksdb-native")[("lk-proc", 86)]
    with open_rocksdb_snapshot(files) as snap:
        entries = [(k, v) for _, k, v in snap.entries("attrs")]
        chunks = list(snap.interleaved("attrs", batch_size=5))
    assert len(entries) > 10 and [len(n) for _, n in chunks[:-1]] == [10] * (len(chunks) - 1)
    raw = raw_from_interleaved(b"".join(d for d, _ in chunks), np.concatenate([n for _, n in chunks]), 2, "x")
    data = raw.buf.data
    assert [(data[s - 2:e], data[vs:ve]) for s, e, vs, ve in
            zip(raw.key_starts, raw.key_ends, raw.value_starts, raw.value_ends)] == entries
    assert raw.key_groups.tolist() == [int.from_bytes(k[:2], "big") for k, _ in entries]


def test_rocksdb_key_shorter_than_its_prefix():
    from statectl.statefmt.flink.streams import raw_from_interleaved

    with pytest.raises(FlinkFormatError) as e:
        raw_from_interleaved(b"\x01ab", np.array([1, 2]), 2, "db column family c")
    assert str(e.value) == "db column family c: a key shorter than its key-group prefix"
