"""`_metadata` versions 3 to 6: older layouts made from a dev fixture's v6 file
(v5 = v6 for savepoints; v4 lacks operator names and uids; v3 lacks the trailer too)."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.metadata_write import encode_metadata
from support.flink_metadata_edits import older, TRAILER_START, utf

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"


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


def _with_lk_proc_fully_finished() -> tuple[bytes, int]:
    """A fixture's `_metadata` with lk-proc fully finished, and the offset of its subtask count."""
    data = (FIXTURES / "long-hashmap-canonical" / "savepoint" / "_metadata").read_bytes()
    meta = parse_metadata(data)
    ops = tuple(dataclasses.replace(op, subtasks=(), fully_finished=True, coordinator=None)
                if op.uid == "lk-proc" else op for op in meta.operators)
    out = encode_metadata(dataclasses.replace(meta, operators=ops))
    label = utf("lk-proc")
    return out, out.index(label + label) + 2 * len(label) + 16 + 4 + 4 + 1  # id, parallelisms, coordinator


def test_flinks_marker_of_a_fully_finished_operator():
    data, at = _with_lk_proc_fully_finished()
    assert struct.unpack_from(">i", data, at) == (-1,)
    (proc,) = [op for op in parse_metadata(data).operators if op.uid == "lk-proc"]
    assert proc.fully_finished and proc.subtasks == ()


@pytest.mark.parametrize("count", [-2, -0x80000000])
def test_any_other_negative_subtask_count_is_refused(count):
    data, at = _with_lk_proc_fully_finished()
    bad = data[:at] + struct.pack(">i", count) + data[at + 4:]
    with pytest.raises(FlinkFormatError) as e:
        parse_metadata(bad, "SP/_metadata")
    assert str(e.value) == f"SP/_metadata: impossible number of subtasks: {count} at offset {at}"
