"""Savepoints made by real Flink 1.17.2, 1.20.3 and 2.3.0 (the suite's Flink job, tests/flink/)
read through statectl equal their expected.json exactly: canonical from either backend, heap
native and RocksDB native, an incremental RocksDB retained checkpoint whose files are shared with
earlier checkpoints and a snappy-compressed savepoint, in every release.

Every table of a snapshot is read in one Spark job: through the readers API (key groups
included and checked) or, for one snapshot per release, through `statectl sql`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.formats import load
from support.flink_expect import check_operators, check_table, cli_rows, readers_rows, views_of
from support.flink_shapes import COMPRESSED, HASHMAP_CANONICAL, INCREMENTAL, METADATA_VERSION, SHAPES

EXTRAS = {"rocksdb-incremental-checkpoint": INCREMENTAL, "hashmap-canonical-snappy": COMPRESSED}
# The snapshot of each release read through the CLI (`statectl sql`); the rest use the readers API.
CLI_SHAPE = {"1.17.2": "rocksdb-native", "1.20.3": "hashmap-canonical", "2.3.0": "rocksdb-incremental-checkpoint"}
CASES = [(v, s) for v in sorted(METADATA_VERSION)
         for s in sorted({**SHAPES, "hashmap-canonical": None, **EXTRAS})]


@pytest.fixture(scope="module")
def snapshots(flink_snapshots):
    """{(version, shape): Snapshot}, each release's made in one JVM (cached between runs)."""
    out = {}
    for version in sorted(METADATA_VERSION):
        shapes = {**SHAPES, "hashmap-canonical": HASHMAP_CANONICAL, **EXTRAS}
        out.update(zip(((version, s) for s in shapes), flink_snapshots(version, list(shapes.values()))))
    return out


@pytest.mark.parametrize("version,shape", CASES)
def test_operators_and_metadata_version(snapshots, version, shape):
    snap = snapshots[(version, shape)]
    sp = open_flink_savepoint(snap.path)
    assert sp.metadata.version == METADATA_VERSION[version]
    check_operators(snap.expected, load(str(snap.path)).operators,
                    named=sp.metadata.version >= 5)


@pytest.mark.slow
@pytest.mark.parametrize("version,shape", CASES)
def test_every_table_equals_expected(spark, snapshots, version, shape):
    snap = snapshots[(version, shape)]
    expected = snap.expected
    assert Path(expected["savepoint_path"]) == snap.path
    operators = {op.operator_id: op for op in load(str(snap.path)).operators}
    labels = {uid: operators[exp["operator_id"]].label for uid, exp in expected["operators"].items()}
    if METADATA_VERSION[version] < 5:  # no uids: views and reads name operators by id
        assert all(labels[uid] == exp["operator_id"] for uid, exp in expected["operators"].items())
    views = views_of(expected, labels)
    rows = cli_rows(snap.path, views) if CLI_SHAPE[version] == shape else \
        readers_rows(spark, snap.path, views, labels)
    by_view: dict[str, list[dict]] = {view: [] for view, *_ in views}
    for view, row in rows:
        by_view[view].append(json.loads(row))
    with_groups = {"_key_group" in r for view, _, kind, _ in views if kind == "keyed" for r in by_view[view]}
    assert with_groups == {CLI_SHAPE[version] != shape}  # the readers' rows have their key groups checked
    for view, uid, kind, state in views:
        check_table(expected, uid, kind, state, by_view[view])


@pytest.mark.parametrize("version", sorted(METADATA_VERSION))
def test_incremental_checkpoint_reads_files_shared_with_earlier_checkpoints(snapshots, version):
    """statectl's file list of each release's incremental checkpoint names files in the job's
    shared/ folder by absolute path, and some of them were written for an earlier checkpoint."""
    snap = snapshots[(version, "rocksdb-incremental-checkpoint")]
    assert snap.expected["snapshot"] == "incremental checkpoint"
    shared = snap.path.parent / "shared"
    files = {Path(f.path.removeprefix("file:")) for op in open_flink_savepoint(snap.path).operators
             for f in op.files}
    in_shared = {p for p in files if p.parent == shared}
    assert in_shared and all(p.is_file() for p in in_shared)
    earlier = set()
    for chk in range(1, snap.expected["checkpoint_id"]):
        if (snap.path.parent / f"chk-{chk}" / "_metadata").exists():
            earlier |= {Path(f.path.removeprefix("file:"))
                        for op in open_flink_savepoint(snap.path.parent / f"chk-{chk}").operators for f in op.files}
    assert in_shared & earlier, "no shared file read by an earlier checkpoint"


@pytest.mark.parametrize("version", sorted(METADATA_VERSION))
def test_compressed_savepoint_streams_are_snappy(snapshots, version):
    snap = snapshots[(version, "hashmap-canonical-snappy")]
    assert snap.expected["compression"] is True
    assert any(b"\xff\x06\x00\x00sNaPpY" in p.read_bytes() for p in snap.path.iterdir() if p.name != "_metadata")
