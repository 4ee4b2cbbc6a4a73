"""The suite's Flink job (tests/flink/) against real Flink 1.17, 1.20 and 2.3: it makes savepoints
and retained checkpoints whose files are all there, and a second run of the job restores each one
with exactly the state its expected.json names."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

import flink_job

# _metadata version each release writes (observed: MetadataV4Serializer up to 1.20, V6 in 2.x).
METADATA_VERSION = {"1.17.2": 4, "1.20.3": 4, "2.3.0": 6}

# Savepoint shapes made for every release, in one JVM per release; each is restored with the
# other backend when canonical, the same backend when native (Flink restores native only so).
SHAPES = {
    "rocksdb-canonical": dict(backend="rocksdb", format="canonical", key_type="string",
                              max_parallelism=256, parallelism=3, inline_threshold=0, seed=90210,
                              keys=25, events=420),
    "hashmap-native": dict(backend="hashmap", format="native", key_type="tuple", seed=4242,
                           keys=24, events=360, partitions=4),
    "rocksdb-native": dict(backend="rocksdb", format="native", key_type="int", states="scalars",
                           seed=31337, keys=16, events=300, partitions=4, inline_threshold=0),
}
RESTORE_WITH = {"rocksdb-canonical": "hashmap", "hashmap-native": "hashmap", "rocksdb-native": "rocksdb"}


def file_handles(metadata: bytes) -> list[tuple[str, str, int]]:
    """(kind, name or path, size) of the file handles found in `_metadata` by their type bytes:
    6 = relative file (UTF name, long size), 2 = absolute file (long size, UTF path)."""
    found = [("relative", m.group(1).decode(), struct.unpack(">q", m.group(2))[0])
             for m in re.finditer(rb"\x06\x00\x24([0-9a-f-]{36})(.{8})", metadata, re.S)]
    for m in re.finditer(rb"\x02(.{8})(..)(file:/)", metadata, re.S):
        (length,) = struct.unpack(">H", m.group(2))
        path = metadata[m.start(3):m.start(3) + length].decode()
        found.append(("absolute", path, struct.unpack(">q", m.group(1))[0]))
    return found


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
    handles = file_handles(metadata)
    on_disk = {p.name: p.stat().st_size for p in snap.path.iterdir() if p.name != "_metadata"}
    assert {(name, size) for kind, name, size in handles} == set(on_disk.items())
    assert all(kind == "relative" for kind, _, _ in handles)
    if SHAPES[shape].get("inline_threshold") == 0:
        assert len(on_disk) >= 2 * SHAPES[shape].get("parallelism", 2)
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


@pytest.fixture(scope="module")
def extras_23(flink_snapshots):
    """Flink 2.3: an incremental RocksDB retained checkpoint and a snappy-compressed savepoint."""
    incremental, compressed = flink_snapshots("2.3.0", [
        dict(checkpoint="incremental", backend="rocksdb", key_type="long", max_parallelism=256,
             parallelism=3),
        dict(compression=True, backend="hashmap", format="canonical", inline_threshold=0,
             key_type="string", seed=77),
    ])
    dumps = flink_job.restore_snapshots("2.3.0", [(incremental, "rocksdb"), (compressed, "rocksdb")])
    return incremental, compressed, dumps


def test_incremental_checkpoint_shares_files(extras_23):
    snap, _, (dump, _) = extras_23
    chk = snap.expected["checkpoint_id"]
    assert chk >= 2 and snap.path.name == f"chk-{chk}"
    assert flink_job.metadata_header(snap.metadata) == (0x4960672D, 6)
    shared = snap.path.parent / "shared"
    handles = file_handles(snap.metadata.read_bytes())
    absolute = {Path(p.removeprefix("file:")): size for kind, p, size in handles if kind == "absolute"}
    in_shared = {p: s for p, s in absolute.items() if p.parent == shared}
    assert in_shared and all(p.stat().st_size == s for p, s in in_shared.items())
    earlier = snap.path.parent / f"chk-{chk - 1}" / "_metadata"
    earlier_paths = {Path(p.removeprefix("file:")) for kind, p, _ in file_handles(earlier.read_bytes())
                     if kind == "absolute"}
    assert set(in_shared) & earlier_paths, "no file shared with the previous checkpoint"
    assert flink_job.restore_mismatches(snap.expected, dump) == []


def test_compressed_savepoint(extras_23):
    _, snap, (_, dump) = extras_23
    assert snap.expected["compression"] is True
    snappy = b"\xff\x06\x00\x00sNaPpY"
    streams = [p for p in snap.path.iterdir() if p.name != "_metadata"]
    assert streams and any(snappy in p.read_bytes() for p in streams)
    assert flink_job.restore_mismatches(snap.expected, dump) == []


def test_missing_jars_fail_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("STATECTL_FLINK_HOME", str(tmp_path))
    with pytest.raises(flink_job.FlinkSetupError) as err:
        flink_job.compile_job("1.17.2")
    assert str(err.value) == (
        f"no Flink 1.17.2 jars in {tmp_path}/1.17.2/lib: run `python tests/flink_job.py fetch 1.17.2` "
        "(it pip-downloads apache-flink-libraries==1.17.2), or set STATECTL_FLINK_HOME")
