"""`_metadata` versions 3 to 6: older layouts made from a dev fixture's v6 file
(v5 = v6 for savepoints; v4 lacks operator names and uids; v3 lacks the trailer too)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from statectl.statefmt.flink.metadata import parse_metadata

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
TRAILER_START = b"\xac\xed\x00\x05"  # Java serialization


def utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def older(data: bytes, version: int) -> bytes:
    v6 = parse_metadata(data)
    out = data[:4] + struct.pack(">i", version) + data[8:]
    if version <= 4:
        for op in v6.operators:
            record = utf(op.name or "") + utf(op.uid or "") + bytes.fromhex(op.operator_id)
            assert out.count(record) == 1
            out = out.replace(record, bytes.fromhex(op.operator_id))
    if version == 3:
        out = out[:out.rindex(TRAILER_START)]
    return out


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
@pytest.mark.parametrize("version", [3, 4, 5])
def test_older_versions(fixture, version):
    data = (FIXTURES / fixture / "savepoint" / "_metadata").read_bytes()
    v6 = parse_metadata(data)
    old = parse_metadata(older(data, version))
    assert old.version == version
    assert len(old.operators) == len(v6.operators) == 7
    for a, b in zip(old.operators, v6.operators):
        if version <= 4:
            assert (a.name, a.uid) == (None, None)
            assert b.uid is not None
        else:
            assert (a.name, a.uid) == (b.name, b.uid)
        assert (a.operator_id, a.parallelism, a.max_parallelism, a.subtasks) == \
            (b.operator_id, b.parallelism, b.max_parallelism, b.subtasks)


def test_trailer_follows_the_operators():
    data = (FIXTURES / "long-hashmap-canonical" / "savepoint" / "_metadata").read_bytes()
    assert len(data) - data.rindex(TRAILER_START) == 745  # the canonical trailer, skipped
