"""Native RocksDB subtask snapshots of real Flink savepoints, opened with rocksdict."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from statectl.statefmt.errors import (
    FlinkFormatError,
    MissingFileError,
    UnknownStateError,
    UnsafeReferenceError,
)
from statectl.statefmt.flink.keyhash import flink_key_group
from statectl.statefmt.flink.rocksdb_native import key_group_prefix_bytes, open_rocksdb_snapshot
from support.flink_expect import native_snapshots

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
NATIVE = {"long-rocksdb-native": "Long", "tuple-rocksdb-native": ("String", "Integer")}


# --- a tiny locator of handle-11 file lists in _metadata (the real parser lives elsewhere) ---


# --- expected entry counts per column family, from expected.json ---

def _expected_counts(fixture, uid, first, last):
    expected = json.loads((FIXTURES / fixture / "expected.json").read_text())
    op = expected["operators"][uid]
    in_range = {label for label, k in expected["keys"].items() if first <= k["key_group"] <= last}
    counts = {}
    for name, state in op["keyed_state"].items():
        values = state["values"]
        if isinstance(values, list):  # window contents: one entry per (key, window)
            counts[name] = sum(1 for v in values if v["key"] in in_range)
        elif state["kind"] == "MAP":
            counts[name] = sum(len(v) for label, v in values.items() if label in in_range)
        elif state["kind"] == "LIST":
            counts[name] = sum(1 for label, v in values.items() if label in in_range and v)
        else:
            counts[name] = sum(1 for label in values if label in in_range)
    for timers in op["timers"].values():
        values = timers["values"]
        if isinstance(values, list):
            counts[timers["state_name"]] = sum(1 for v in values if v["key"] in in_range)
        else:
            counts[timers["state_name"]] = sum(len(v) for label, v in values.items() if label in in_range)
    return counts


def _read_key(buf, pos, key_type):
    """A Long, Integer, String (StringValue: varint length + 1, varint UTF-16 units) or tuple key."""
    if isinstance(key_type, tuple):
        fields = []
        for t in key_type:
            v, pos = _read_key(buf, pos, t)
            fields.append(v)
        return tuple(fields), pos
    if key_type == "Long":
        return struct.unpack_from(">q", buf, pos)[0], pos + 8
    if key_type == "Integer":
        return struct.unpack_from(">i", buf, pos)[0], pos + 4

    def varint(p):
        shift = value = 0
        while True:
            b = buf[p]
            value |= (b & 0x7F) << shift
            p += 1
            if b < 0x80:
                return value, p
            shift += 7

    n, pos = varint(pos)
    units = []
    for _ in range(n - 1):
        u, pos = varint(pos)
        units.append(u)
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le"), pos


# --- the fixtures -----------------------------------------------------------------------

def test_the_locator_finds_every_subtask():
    assert sorted((op, first) for op, first in native_snapshots("long-rocksdb-native")) == [
        ("lk-proc", 0), ("lk-proc", 86), ("lk-proc", 171),
        ("lk-win", 0), ("lk-win", 86), ("lk-win", 171)]
    assert sorted((op, first) for op, first in native_snapshots("tuple-rocksdb-native")) == [
        ("tk-proc", 0), ("tk-proc", 64), ("tk-win", 0), ("tk-win", 64)]


def test_lk_proc_subtask_0_decodes_as_the_reference_shows():
    files = native_snapshots("long-rocksdb-native")[("lk-proc", 0)]
    key = bytes.fromhex("0003" "0020000000000001" "00")  # kg 3, Long 9007199254740993, VoidNamespace
    with open_rocksdb_snapshot(files) as snap:
        assert set(snap.column_families) == {
            "count", "events", "attrs", "sum", "avg", "ratio", "flag", "last_type", "values",
            "by_bucket", "_timer_state/event_user-timers", "_timer_state/processing_user-timers"}
        entries = {(cf, k): v for cf, k, v in snap.entries()}
    assert entries[("count", key)] == (16).to_bytes(8, "big")
    events = entries[("events", key)]
    assert events.startswith(bytes.fromhex("0c") + b"8:view:1390" + b"," + bytes.fromhex("0d") + b"12:view:1025,")
    assert events.count(b",") == 15  # 16 merge operands joined by the list delimiter
    assert entries[("by_bucket", key + (10000).to_bytes(8, "big"))] == bytes.fromhex("0013") + b"buy,click,view,buy"
    assert entries[("avg", key)] == bytes.fromhex("0000000000008f08" "0000000000000010")
    timer = bytes.fromhex("0003" "8000000000007724" "0020000000000001" "00")  # timestamp 30500
    assert entries[("_timer_state/event_user-timers", timer)] == b""


@pytest.mark.parametrize("fixture", sorted(NATIVE))
def test_every_subtask_has_expected_json_entry_counts_and_flinks_key_groups(fixture):
    expected = json.loads((FIXTURES / fixture / "expected.json").read_text())
    max_p, key_type = expected["max_parallelism"], NATIVE[fixture]
    width = key_group_prefix_bytes(max_p)
    ranges = {first: last for first, last in expected["key_group_range_per_subtask"].values()}
    checked_keys = set()
    for (uid, first), files in sorted(native_snapshots(fixture).items()):
        last = ranges[first]
        with open_rocksdb_snapshot(files) as snap:
            counts = dict.fromkeys(snap.column_families, 0)
            for cf, k, _ in snap.entries():
                counts[cf] += 1
                group = int.from_bytes(k[:width], "big")
                assert first <= group <= last
                key, _ = _read_key(k, width + (8 if cf.startswith("_timer_state/") else 0), key_type)
                assert flink_key_group(key, key_type, max_p) == group, (cf, key)
                checked_keys.add(key)
        assert counts == _expected_counts(fixture, uid, first, last), (uid, first)
    labels = {tuple(k["key"]) if isinstance(k["key"], list) else k["key"]
              for k in expected["keys"].values()}
    assert checked_keys == labels  # every key of the job was found and rehashed


def test_list_states_are_merged_and_tombstones_respected():
    """`events` holds only MERGE records (default options would read it as empty); `sum`
    of key index 0 (key 0, cleared after a fired timer) is a DEL."""
    files = native_snapshots("long-rocksdb-native")[("lk-proc", 171)]
    expected = json.loads((FIXTURES / "long-rocksdb-native" / "expected.json").read_text())
    assert expected["keys"]["0"]["key_group"] in range(171, 256)
    key0 = expected["keys"]["0"]["key_group"].to_bytes(2, "big") + (0).to_bytes(8, "big") + b"\x00"
    with open_rocksdb_snapshot(files) as snap:
        events = {k: v for _, k, v in snap.entries("events")}
        sums = {k: v for _, k, v in snap.entries("sum")}
    assert "0" not in expected["operators"]["lk-proc"]["keyed_state"]["sum"]["values"]
    assert key0 not in sums and key0 in events
    values = expected["operators"]["lk-proc"]["keyed_state"]["events"]["values"]["0"]
    assert events[key0] == b",".join(bytes([len(v) + 1]) + v.encode() for v in values)


def test_one_column_family_and_a_key_group_range():
    files = native_snapshots("long-rocksdb-native")[("lk-proc", 0)]
    with open_rocksdb_snapshot(files) as snap:
        every = list(snap.entries("count"))
        assert {cf for cf, _, _ in every} == {"count"}
        groups = sorted(int.from_bytes(k[:2], "big") for _, k, _ in every)
        assert len(groups) == 10
        some = list(snap.entries("count", key_groups=(groups[0], groups[4]), max_parallelism=256))
        assert [int.from_bytes(k[:2], "big") for _, k, _ in some] == groups[:5]
        assert list(snap.entries("count", key_groups=(3, 3), max_parallelism=256)) == [
            e for e in every if e[1][:2] == b"\x00\x03"]
        with pytest.raises(UnknownStateError, match=r"has no column family 'nope'; it has count, "):
            list(snap.entries("nope"))


def test_record_batches_hold_the_same_entries():
    files = native_snapshots("long-rocksdb-native")[("lk-proc", 86)]
    with open_rocksdb_snapshot(files) as snap:
        entries = [(k, v) for _, k, v in snap.entries("attrs")]
        batches = list(snap.record_batches("attrs", batch_size=7))
        ranged = list(snap.record_batches("attrs", key_groups=(86, 120), max_parallelism=256))
    assert len(entries) > 14 and [b.num_rows for b in batches[:-1]] == [7] * (len(batches) - 1)
    rows = [(r["key"], r["value"]) for b in batches for r in b.to_pylist()]
    assert rows == entries
    assert [r["key"] for b in ranged for r in b.to_pylist()] == [
        k for k, _ in entries if int.from_bytes(k[:2], "big") <= 120]
    assert batches[0].schema.names == ["key", "value"]


def test_key_group_prefix_width():
    assert [key_group_prefix_bytes(p) for p in (1, 128, 129, 256, 32768)] == [1, 1, 2, 2, 2]


def test_remote_files_are_downloaded(tmp_path):
    files = native_snapshots("tuple-rocksdb-native")[("tk-win", 64)]
    uris = [(local, "file://" + str(path)) for local, path in files]
    with open_rocksdb_snapshot(uris, workdir=tmp_path) as snap:
        (folder,) = os.listdir(tmp_path)
        placed = tmp_path / folder
        assert sorted(os.listdir(placed)) == sorted([local for local, _ in files] + ["rocksdict-config.json"])
        assert not any(os.path.islink(placed / local) for local, _ in files)
        assert len(list(snap.entries())) > 0
    assert os.listdir(tmp_path) == []


# --- errors, and no folder left behind ---------------------------------------------------

@pytest.fixture
def workdir(tmp_path):
    """A private parent for the snapshot folders; the test checks it is empty at the end."""
    d = tmp_path / "work"
    d.mkdir()
    yield d
    assert os.listdir(d) == []


def test_the_folder_is_removed_after_an_error_in_the_caller(workdir):
    files = native_snapshots("long-rocksdb-native")[("lk-win", 0)]
    with pytest.raises(RuntimeError):
        with open_rocksdb_snapshot(files, workdir=workdir) as snap:
            assert os.path.isdir(snap.directory)
            next(snap.entries())
            raise RuntimeError("the caller fails")


def test_a_missing_file_is_one_clear_error(workdir):
    files = native_snapshots("long-rocksdb-native")[("lk-win", 0)]
    gone = workdir.parent / "gone"
    files = [(local, gone if local == "MANIFEST-000005" else path) for local, path in files]
    with pytest.raises(MissingFileError, match=rf"^{re.escape(str(gone))}: file is missing$"):
        with open_rocksdb_snapshot(files, workdir=workdir):
            pass


def test_snapshot_without_current_or_with_unsafe_names(workdir):
    files = native_snapshots("long-rocksdb-native")[("lk-win", 0)]
    with pytest.raises(FlinkFormatError, match=r"^a Flink RocksDB snapshot of 4 files has no CURRENT file$"):
        with open_rocksdb_snapshot([f for f in files if f[0] != "CURRENT"], workdir=workdir):
            pass
    with pytest.raises(UnsafeReferenceError, match=r"^RocksDB file name '../CURRENT' in a Flink snapshot "
                                                    r"is not a plain file name$"):
        with open_rocksdb_snapshot([("../CURRENT", files[0][1])], workdir=workdir):
            pass
    with pytest.raises(FlinkFormatError, match=r"^a Flink RocksDB snapshot names CURRENT twice$"):
        with open_rocksdb_snapshot(files + [("CURRENT", files[0][1])], workdir=workdir):
            pass


def _copy(files, directory):
    directory.mkdir()
    out = []
    for local, path in files:
        shutil.copyfile(path, directory / path.name)
        out.append((local, directory / path.name))
    return out


def test_a_merge_operator_missing_from_options_is_an_error_not_an_empty_list(workdir, tmp_path):
    """Without StringAppendTESTOperator rocksdict reads list states as empty, silently."""
    files = _copy(native_snapshots("long-rocksdb-native")[("lk-proc", 0)], tmp_path / "copy")
    (options,) = [path for local, path in files if local.startswith("OPTIONS-")]
    text = options.read_text()
    assert text.count("merge_operator={id=StringAppendTESTOperator;delimiter=,;}") == 13
    options.write_text(text.replace("merge_operator={id=StringAppendTESTOperator;delimiter=,;}",
                                    "merge_operator=nullptr"))
    with open_rocksdb_snapshot(files, workdir=workdir) as snap:
        assert len(list(snap.entries("count"))) == 10  # plain values still read
        with pytest.raises(FlinkFormatError) as e:
            list(snap.entries("events"))
    assert re.fullmatch(
        r"RocksDB snapshot \(15 files, CURRENT is .+\): cannot read column family 'events': "
        r"Invalid argument: merge_operator_ must be set\.", str(e.value)), str(e.value)


def test_a_corrupt_sst_is_an_error(workdir, tmp_path):
    files = _copy(native_snapshots("long-rocksdb-native")[("lk-proc", 0)], tmp_path / "copy")
    (path,) = [path for local, path in files
               if local.endswith(".sst") and os.path.getsize(path) > 3000]
    data = bytearray(path.read_bytes())
    for i in range(20, 120):  # inside the first data block
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(FlinkFormatError, match=r"^RocksDB snapshot \(15 files, CURRENT is .+\): cannot "
                                               r"read column family '[^']+': Corruption: "):
        with open_rocksdb_snapshot(files, workdir=workdir) as snap:
            for _ in snap.entries():
                pass


def test_a_folder_that_is_not_a_database_is_an_error(workdir, tmp_path):
    bogus = tmp_path / "bogus"
    bogus.write_bytes(b"not a rocksdb file\n")
    with pytest.raises(FlinkFormatError, match=r"^cannot open the RocksDB snapshot \(1 files, CURRENT is "):
        with open_rocksdb_snapshot([("CURRENT", bogus)], workdir=workdir):
            pass


def test_a_wal_dir_of_the_writing_task_is_ignored(workdir, tmp_path):
    """Flink 1.17 and 1.20 record the task's temporary wal_dir in OPTIONS; it is gone when the
    savepoint is read, and the snapshot still opens (its WAL is looked for beside its files)."""
    files = _copy(native_snapshots("long-rocksdb-native")[("lk-proc", 0)], tmp_path / "copy")
    (options,) = [path for local, path in files if local.startswith("OPTIONS-")]
    text = options.read_text()
    assert "wal_dir=" not in text and text.count("[DBOptions]\n") == 1
    gone = tmp_path / "minicluster_gone" / "db"
    options.write_text(text.replace("[DBOptions]\n", f"[DBOptions]\n  wal_dir={gone}\n"))
    with open_rocksdb_snapshot(files, workdir=workdir) as snap:
        assert len(list(snap.entries("count"))) == 10
    assert not gone.exists()
