"""A serializer statectl cannot parse fails only the part of the savepoint its header is in.

The dev fixture `long-hashmap-canonical`, copied, gets a custom serializer snapshot class (a
renamed class in one subtask's keyed stream header of lk-proc, or in one operator stream
header of lk-union-op): `info` lists every operator and marks the part, `validate` checks
every file, the part reads as one error line naming the class and the operator, everything
else reads, and `modify` derives a savepoint by metadata alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from statectl.statefmt.errors import UnreadableStateError
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, operator_state_table
from statectl.statefmt.model import KEYED_PART
from statectl.statefmt.formats import load

FIXTURE = Path(__file__).parents[2] / "fixtures" / "flink-dev" / "long-hashmap-canonical" / "savepoint"
PROC_STREAM = "bc780fd0-df7b-44c3-82d9-5de05e45083a"  # lk-proc subtask 0
UNION_STREAM = "13f46333-32ce-4529-93c1-8a0f19ff2bf4"  # one of lk-union-op's operator streams
LONG = b"LongSerializer$LongSerializerSnapshot"
CUSTOM = b"LongSerializer$CustomLongSnapshot12345"[:len(LONG)]
STRING = b"StringSerializer$StringSerializerSnapshot"
CUSTOM_STRING = b"StringSerializer$MyOwnStringSnapshot12345"[:len(STRING)]


def _renamed(tmp_path: Path, stream: str, old: bytes, new: bytes) -> Path:
    sp = tmp_path / "sp"
    shutil.copytree(FIXTURE, sp)
    data = (sp / stream).read_bytes()
    assert old in data and len(old) == len(new)
    (sp / stream).write_bytes(data.replace(old, new, 1))
    return sp


@pytest.fixture
def custom_keyed(tmp_path) -> Path:
    return _renamed(tmp_path, PROC_STREAM, LONG, CUSTOM)


@pytest.fixture
def custom_operator_state(tmp_path) -> Path:
    return _renamed(tmp_path, UNION_STREAM, STRING, CUSTOM_STRING)


def test_every_operator_is_listed_and_only_the_keyed_part_is_unreadable(custom_keyed):
    sp = load(custom_keyed)
    whole = load(FIXTURE)
    assert [op.label for op in sp.operators] == [op.label for op in whole.operators]
    proc = sp.operator("lk-proc")
    assert proc.keyed is None
    [part] = proc.unreadable
    assert part.part == KEYED_PART
    assert "org.apache.flink.api.common.typeutils.base." + CUSTOM.decode() in part.reason
    assert PROC_STREAM in part.reason
    # its files are still the savepoint's: listed and checked
    assert {f.ref.path for f in part.files} == {f.ref.path for f in whole.operator("lk-proc").keyed.files}
    for op in sp.operators:
        if op.label != "lk-proc":
            assert op == whole.operator(op.label)


def test_other_operators_read_and_the_part_is_one_error(custom_keyed):
    fsp = open_flink_savepoint(custom_keyed)
    whole = open_flink_savepoint(FIXTURE)
    assert keyed_table(fsp.operator("lk-win")).equals(keyed_table(whole.operator("lk-win")))
    assert operator_state_table(fsp.operator("lk-bcast"), "rules").equals(
        operator_state_table(whole.operator("lk-bcast"), "rules"))
    with pytest.raises(UnreadableStateError) as e:
        keyed_table(fsp.operator("lk-proc"))
    assert str(e.value).startswith("operator lk-proc: its keyed state and timers cannot be read: ")
    assert CUSTOM.decode() in str(e.value)


def test_cli_lists_validates_and_refuses_the_part_in_one_line(cli, custom_keyed):
    info = cli("info", str(custom_keyed))
    assert info.returncode == 0, info.stderr
    assert "Unreadable" in info.stdout and "lk-proc" in info.stdout
    valid = cli("validate", str(custom_keyed))
    assert valid.returncode == 0, valid.stderr
    assert "valid:" in valid.stdout
    read = cli("read", str(custom_keyed), "--uid", "lk-proc")
    assert read.returncode == 1
    lines = read.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: operator lk-proc: its keyed state and timers cannot be read: ")
    assert CUSTOM.decode() in lines[0] and "Traceback" not in read.stderr
    timers = cli("read", str(custom_keyed), "--uid", "lk-proc", "--timers")
    assert timers.returncode == 1 and timers.stderr.count("\n") == 1


def test_cli_reads_the_rest(cli, custom_keyed):
    out = cli("read", str(custom_keyed), "--uid", "lk-bcast", "-f", "jsonl")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.strip().splitlines()) == 7  # the 7 broadcast rules
    count = cli("sql", str(custom_keyed), "SELECT count(*) AS n FROM `lk-win`", "-f", "jsonl")
    assert count.returncode == 0, count.stderr
    assert count.stdout.strip() != '{"n":0}'


def test_modify_derives_a_savepoint_by_metadata_alone(cli, custom_keyed, tmp_path):
    out = tmp_path / "out"
    done = cli("modify", str(custom_keyed), str(out), "--rename", "lk-win=lk-window")
    assert done.returncode == 0, done.stderr
    derived = load(out)
    assert derived.operator("lk-proc").unreadable[0].part == KEYED_PART
    assert derived.operator("lk-window").keyed is not None
    assert (custom_keyed / PROC_STREAM).read_bytes() != (FIXTURE / PROC_STREAM).read_bytes()  # base untouched


def test_an_unparsable_operator_state_fails_only_itself(cli, custom_operator_state):
    sp = load(custom_operator_state)
    union = sp.operator("lk-union-op")
    assert [u.part for u in union.unreadable] == ["union-counts"]
    assert CUSTOM_STRING.decode() in union.unreadable[0].reason
    assert sp.operator("lk-proc").keyed is not None
    read = cli("read", str(custom_operator_state), "--uid", "lk-union-op", "--state", "union-counts")
    assert read.returncode == 1
    assert read.stderr.strip().splitlines() == [
        f"error: operator lk-union-op: its operator state 'union-counts' cannot be read: {union.unreadable[0].reason}"]
    valid = cli("validate", str(custom_operator_state))
    assert valid.returncode == 0, valid.stderr
