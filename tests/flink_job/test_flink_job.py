"""The suite's Flink job (tests/flink/) against real Flink 1.17, 1.20 and 2.3: it makes savepoints
and retained checkpoints whose files are all there, and a second run of the job restores each one
with exactly the state its expected.json names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support import flink_job
from support.flink_metadata_scan import scan
from support.flink_shapes import COMPRESSED, INCREMENTAL, METADATA_VERSION, SHAPES

# The keyed state handle each shape's savepoint holds (type byte; flink_metadata_scan.NAMES).
KEYED_HANDLE = {"rocksdb-canonical": 7, "hashmap-native": 12, "rocksdb-native": 11}
RESTORE_WITH = {"rocksdb-canonical": "hashmap", "hashmap-native": "hashmap", "rocksdb-native": "rocksdb"}


@pytest.fixture(scope="module", params=sorted(METADATA_VERSION))
def release(request, flink_snapshots):
    """One release's savepoints (all SHAPES) and their restore dumps, made once and cached."""
    version = request.param
    snaps = dict(zip(SHAPES, flink_snapshots(version, list(SHAPES.values()))))
    dumps = flink_job.restore_snapshots(version, [(snaps[s], RESTORE_WITH[s]) for s in SHAPES])
    return version, snaps, dict(zip(SHAPES, dumps))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_savepoint_metadata_and_files(release, shape):
    version, snaps, _ = release
    snap = snaps[shape]
    assert snap.expected["flink_version"] == version
    assert flink_job.metadata_header(snap.metadata) == (0x4960672D, METADATA_VERSION[version])
    metadata = snap.metadata.read_bytes()
    found = scan(snap.metadata)
    assert found["operators"] == 7
    assert found["handles"][KEYED_HANDLE[shape]] == SHAPES[shape].get("parallelism", 2) * 2  # proc, win
    on_disk = {p.name: p.stat().st_size for p in snap.path.iterdir() if p.name != "_metadata"}
    assert {(name, size) for kind, name, size in found["files"]} == set(on_disk.items())
    assert all(kind == "relative" for kind, _, _ in found["files"])
    if SHAPES[shape].get("inline_threshold") == 0:
        assert found["handles"][1] == 0 and len(on_disk) >= 2 * SHAPES[shape].get("parallelism", 2)
    for op in snap.expected["operators"].values():
        if not op.get("stateless"):
            assert bytes.fromhex(op["operator_id"]) in metadata, op["uid"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_restore_gives_expected_state(release, shape):
    _, snaps, dumps = release
    expected, dump = snaps[shape].expected, dumps[shape]
    assert flink_job.restore_mismatches(expected, dump) == []
    proc = next(op for op in expected["operators"].values() if op["role"] == "proc")
    keys_with_events = len(proc["keyed_state"]["count"]["values"])
    assert keys_with_events == SHAPES[shape]["keys"]
    assert len(dump["operators"][proc["uid"]]["keyed_state"]["count"]["values"]) == keys_with_events
    assert sum(map(len, dump["operators"][proc["uid"]]["timers"]["event_time"]["values"].values())) > 0


def test_restore_reports_a_difference(release):
    """The comparison is not vacuous: one changed value is reported with its state and key."""
    _, snaps, dumps = release
    expected, dump = snaps["hashmap-native"].expected, dumps["hashmap-native"]
    proc_uid = next(op["uid"] for op in expected["operators"].values() if op["role"] == "proc")
    counts = dump["operators"][proc_uid]["keyed_state"]["count"]["values"]
    label = sorted(counts)[0]
    counts[label] += 1
    try:
        problems = flink_job.restore_mismatches(expected, dump)
    finally:
        counts[label] -= 1
    assert len(problems) == 1 and problems[0].startswith(f"{proc_uid} state count: expected {{")


@pytest.fixture(scope="module", params=sorted(METADATA_VERSION))
def extras(request, flink_snapshots):
    """One release's incremental RocksDB retained checkpoint and snappy-compressed savepoint,
    each restored into RocksDB."""
    version = request.param
    incremental, compressed = flink_snapshots(version, [INCREMENTAL, COMPRESSED])
    dumps = flink_job.restore_snapshots(version, [(incremental, "rocksdb"), (compressed, "rocksdb")])
    return version, incremental, compressed, dumps


@pytest.fixture(scope="module")
def size_23(flink_snapshots):
    """Flink 2.3: a (small) size-mode savepoint."""
    return flink_snapshots("2.3.0", [
        dict(mode="size", keys=3000, backend="hashmap", format="canonical", inline_threshold=0)])[0]


def test_incremental_checkpoint_shares_files(extras):
    version, snap, _, (dump, _) = extras
    chk = snap.expected["checkpoint_id"]
    assert chk >= 2 and snap.path.name == f"chk-{chk}"
    assert flink_job.metadata_header(snap.metadata) == (0x4960672D, METADATA_VERSION[version])
    shared = snap.path.parent / "shared"
    found = scan(snap.metadata)
    assert found["handles"][11] == 3 * 2  # incremental RocksDB handles of proc and win
    absolute = {Path(p.removeprefix("file:")): size for kind, p, size in found["files"] if kind == "absolute"}
    in_shared = {p: s for p, s in absolute.items() if p.parent == shared}
    assert in_shared and all(p.stat().st_size == s for p, s in in_shared.items())
    earlier_paths = {Path(p.removeprefix("file:")) for c in range(1, chk)
                     if (snap.path.parent / f"chk-{c}" / "_metadata").exists()
                     for kind, p, _ in scan(snap.path.parent / f"chk-{c}" / "_metadata")["files"]
                     if kind == "absolute"}
    assert set(in_shared) & earlier_paths, "no file shared with an earlier checkpoint"
    assert flink_job.restore_mismatches(snap.expected, dump) == []


def test_compressed_savepoint(extras):
    _, _, snap, (_, dump) = extras
    assert snap.expected["compression"] is True
    snappy = b"\xff\x06\x00\x00sNaPpY"
    streams = [p for p in snap.path.iterdir() if p.name != "_metadata"]
    assert streams and any(snappy in p.read_bytes() for p in streams)
    assert flink_job.restore_mismatches(snap.expected, dump) == []


def test_missing_jars_fail_clearly(tmp_path, monkeypatch):
    """Offline (STATECTL_FLINK_OFFLINE), missing jars name the command that fetches them;
    otherwise the tests fetch them themselves (require_jars)."""
    monkeypatch.setenv("STATECTL_FLINK_HOME", str(tmp_path))
    monkeypatch.setenv("STATECTL_FLINK_OFFLINE", "1")
    with pytest.raises(flink_job.FlinkSetupError) as err:
        flink_job.compile_job("1.17.2")
    assert str(err.value) == (
        f"no Flink 1.17.2 jars in {tmp_path}/1.17.2/lib: run `python tests/support/flink_job.py fetch 1.17.2` "
        "(it pip-downloads apache-flink-libraries==1.17.2), or set STATECTL_FLINK_HOME")


def test_a_hung_job_fails_with_its_main_threads_stack(tmp_path):
    """A Flink JVM that never ends is killed at its timeout and raises FlinkJobHung (not
    FlinkJobError, which a test expecting Flink to refuse a savepoint would take for a pass), whose
    message is where its main thread waited."""
    (tmp_path / "Hang.java").write_text(
        "public class Hang { public static void main(String[] a) throws Exception { Thread.sleep(600_000); } }")
    subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / "Hang.java")], check=True)
    with pytest.raises(flink_job.FlinkJobHung) as err:
        flink_job._run_or_dump(["java", "-cp", str(tmp_path), "Hang"], "1.20.3", timeout=3)
    assert not isinstance(err.value, flink_job.FlinkJobError)
    message = str(err.value)
    assert message.startswith('the Flink 1.20.3 job ran over 3 s; its main thread then:\n"main" #1')
    assert "at Hang.main(Hang.java:1)" in message


def test_a_changed_job_description_leaves_later_ones_alone():
    """job_description gives a new description each call: a test that declares count as Integer
    in its own (test_flink_restore) once made every later declared restore of the process declare
    it so, and Flink refused the dev-fixture round trip's LongSerializer state."""
    expected = flink_job.fixture_expected("long-hashmap-canonical")
    changed = flink_job.job_description(expected)
    for op in changed["operators"]:
        for state in op.get("keyed_state", []):
            state["type"] = "Integer"
    proc = next(op for op in flink_job.job_description(expected)["operators"] if op["uid"] == "lk-proc")
    assert [(s["name"], s["kind"], s.get("type")) for s in proc["keyed_state"]] == [
        ("count", "VALUE", "Long"), ("events", "LIST", None), ("attrs", "MAP", None),
        ("sum", "REDUCING", "Long"), ("avg", "AGGREGATING", None), ("ratio", "VALUE", "Double"),
        ("flag", "VALUE", "Boolean"), ("last_type", "VALUE", "String"), ("values", "LIST", None),
        ("by_bucket", "MAP", None)]


def test_size_mode(size_23):
    """Size mode: String keys user-%07d, each with count = its index and events = [key, index]."""
    snap = size_23
    assert snap.expected["size"] == {
        "keys": 3000, "key_format": "user-%07d (key index i, 0 <= i < keys)", "count": "Long = i",
        "events": "List<String> = [label, decimal i]", "count_sum": 3000 * 2999 // 2,
        "events_elements": 6000}
    found = scan(snap.metadata)
    assert found["operators"] == 2 and found["handles"][7] == 2 and found["handles"][4] == 0
    data = b"".join(p.read_bytes() for p in snap.path.iterdir() if p.name != "_metadata")
    assert all(f"user-{i:07d}".encode() in data for i in (0, 1, 1500, 2999))
    assert b"user-0003000" not in data
