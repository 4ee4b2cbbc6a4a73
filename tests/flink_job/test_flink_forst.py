"""ForSt, Flink 2.x's disaggregated state backend (`state.backend.type: forst`), through the
suite's Flink job (tests/flink/README.md "ForSt"): NATIVE savepoints of the DataStream job and of
the SQL job made by Flink 2.3.0, read by statectl exactly as their expected.json says (the SQL
job's state, operator by operator, in tests/flink_job/test_flink_sql_state.py, whose shapes
include this one).

ForSt's synchronous keyed backend (every operator here uses synchronous state) keeps its database
local and a NATIVE savepoint copies its files out, in the same handle RocksDB writes (type 11,
IncrementalRemoteKeyedStateHandle: a meta stream and the database's files by local name), so
statectl reads it as a native RocksDB snapshot. Flink refuses a CANONICAL savepoint of ForSt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import flink_job
from support.flink_metadata_scan import scan
from statectl.statefmt.flink import handles
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.native_sst import SstSnapshot
from statectl.statefmt.flink.rocksdb_native import open_rocksdb_snapshot
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.streamio import native_files, split_base
from statectl.statefmt.formats import load
from support.flink_expect import cli_rows, readers_rows
from support.cli_runner import statectl
from support.flink_expect import check_operators, check_table, views_of

VERSION = "2.3.0"
# The DataStream job's savepoints: the default knobs (every state group of `all`, Long keys, the
# default inline threshold: small files inline in _metadata), and String keys with every file
# on disk (threshold 0) at parallelism 3.
SHAPES = {
    "forst-native": dict(backend="forst", format="native"),
    "forst-native-files": dict(backend="forst", format="native", key_type="string", parallelism=3,
                               inline_threshold=0, seed=1618, keys=26, events=390),
}
# How each shape's tables are read: statectl sql (the CLI) or the readers API (key groups checked).
READ_WITH = {"forst-native": "cli", "forst-native-files": "readers"}
SQL = dict(backend="forst", format="native")


@pytest.fixture(scope="module")
def snapshots(flink_snapshots):
    """{shape: Snapshot}, made in one JVM (cached between runs)."""
    return dict(zip(SHAPES, flink_snapshots(VERSION, list(SHAPES.values()))))


@pytest.fixture(scope="module")
def sql_snapshot():
    try:
        return flink_job.make_sql_snapshot(VERSION, **SQL)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


def _keyed_handles(path: Path) -> list:
    return [s.managed_keyed for op in parse_metadata((path / "_metadata").read_bytes()).operators
            for s in op.subtasks if s.managed_keyed is not None]


# --- the DataStream job ---------------------------------------------------------------------

# (Flink's own runs first: they start a JVM of theirs, better before the suite's Spark starts)

def test_restore_into_forst(snapshots):
    """Flink itself restores each savepoint into ForSt with exactly expected.json's state."""
    snaps = [snapshots[s] for s in sorted(SHAPES)]
    dumps = flink_job.restore_snapshots(VERSION, [(s, "forst") for s in snaps])
    for snap, dump in zip(snaps, dumps):
        assert flink_job.restore_mismatches(snap.expected, dump) == []


def test_forst_needs_flink_2():
    with pytest.raises(ValueError, match=r"backend=forst needs Flink 2\.x.*not in Flink 1\.20\.3"):
        flink_job.make_snapshot("1.20.3", backend="forst", format="native")


def test_canonical_savepoint_is_refused():
    """Flink 2.3 fails the job on a CANONICAL savepoint of ForSt (every task: "Configured state
    backend (ForStStateBackend{...}) does not support CANONICAL savepoints"): the driver refuses
    it before starting a JVM."""
    with pytest.raises(ValueError, match="backend=forst takes NATIVE savepoints only"):
        flink_job.make_snapshot(VERSION, backend="forst", format="canonical")
    with pytest.raises(ValueError, match="backend=forst takes NATIVE savepoints only"):
        flink_job.make_sql_snapshot(VERSION, backend="forst", format="canonical")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_savepoint_handles_and_files(snapshots, shape):
    snap = snapshots[shape]
    p = SHAPES[shape].get("parallelism", 2)
    assert (snap.expected["state_backend"], snap.expected["savepoint_format"]) == ("forst", "NATIVE")
    assert flink_job.metadata_header(snap.metadata) == (flink_job.METADATA_MAGIC, 6)
    found = scan(snap.metadata)
    assert found["operators"] == 7
    assert found["handles"][11] == 2 * p  # proc and win: IncrementalRemoteKeyedStateHandle
    assert not {7, 12} & {t for t, n in found["handles"].items() if n}  # no key-groups stream
    on_disk = {f.name: f.stat().st_size for f in snap.path.iterdir() if f.name != "_metadata"}
    assert {(name, size) for kind, name, size in found["files"]} == set(on_disk.items())
    assert all(kind == "relative" for kind, _, _ in found["files"])
    keyed = _keyed_handles(snap.path)
    assert len(keyed) == 2 * p and all(isinstance(h, handles.IncrementalRocksDB) for h in keyed)
    for h in keyed:
        names = [local for local, _ in h.shared + h.private]
        assert not h.shared  # a savepoint owns its files: all private
        assert "CURRENT" in names and any(n.startswith("MANIFEST-") for n in names)
        assert any(n.endswith(".sst") for n in names)
        if SHAPES[shape].get("inline_threshold") == 0:
            assert all(isinstance(s, handles.RelativeFile) for _, s in h.private)
            assert isinstance(h.meta, handles.RelativeFile)


def _subtask_files(path: Path, tmp: Path) -> list:
    """(operator label, subtask, [(local name, file)]) of every keyed subtask of a native snapshot."""
    out, seen = [], set()
    for op in open_flink_savepoint(path).operators:
        for split in op.keyed_splits:
            if (op.operator_id, split.subtask) not in seen:
                seen.add((op.operator_id, split.subtask))
                folder = tmp / f"{op.operator_id}-{split.subtask}"
                folder.mkdir()
                out.append((op.label, split.subtask, native_files(split_base(split), split.handle, str(folder))))
    return out


def _joined(chunks) -> tuple[bytes, list[int]]:
    chunks = list(chunks)
    return b"".join(d for d, _ in chunks), [int(n) for _, lengths in chunks for n in lengths]


def _direct_equals_rocksdb(path: Path, tmp_path: Path) -> dict[str, set[str]]:
    """Every SST file of a native savepoint opens in statectl's own SST reader, and every column
    family of every keyed subtask reads the same live entries as RocksDB itself gives them
    (rocksdict); the column families with files, by operator label."""
    families: dict[str, set[str]] = {}
    for label, subtask, files in _subtask_files(path, tmp_path):
        workdir = tmp_path / f"rocksdb-{len(families)}-{subtask}"
        workdir.mkdir()
        with SstSnapshot(files, f"{label} {subtask}") as db, \
                open_rocksdb_snapshot(files, workdir=str(workdir)) as rocks:
            # index type 2 (partitioned) is ForSt's default; Flink's RocksDB writes type 0
            for t in (t for ts in db._tables.values() for t in ts):
                assert (t.format_version, t.checksum, t.index_type, t.properties[b"rocksdb.compression"],
                        t.properties[b"rocksdb.comparator"]) == (5, 4, 2, b"Snappy", b"leveldb.BytewiseComparator")
            assert set(db.column_families) <= set(rocks.column_families) - {"default"}
            for cf in set(rocks.column_families) - {"default"}:  # a state without files has no SST
                direct = _joined(db.interleaved(cf)) if cf in db.column_families else (b"", [])
                assert direct == _joined(rocks.interleaved(cf)), (label, subtask, cf)
            families.setdefault(label, set()).update(db.column_families)
    return families


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sst_files_are_read_directly(snapshots, shape, tmp_path):
    families = _direct_equals_rocksdb(snapshots[shape].path, tmp_path)
    assert families["proc"] >= set(snapshots[shape].expected["operators"]["proc"]["keyed_state"])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_operators(snapshots, shape):
    snap = snapshots[shape]
    check_operators(snap.expected, load(str(snap.path)).operators, named=True)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_table_equals_expected(spark, snapshots, shape):
    snap = snapshots[shape]
    expected = snap.expected
    operators = {op.operator_id: op for op in load(str(snap.path)).operators}
    labels = {uid: operators[exp["operator_id"]].label for uid, exp in expected["operators"].items()}
    views = views_of(expected, labels)
    rows = cli_rows(snap.path, views) if READ_WITH[shape] == "cli" else \
        readers_rows(spark, snap.path, views, labels)
    by_view: dict[str, list[dict]] = {view: [] for view, *_ in views}
    for view, row in rows:
        by_view[view].append(json.loads(row))
    for view, uid, kind, state in views:
        check_table(expected, uid, kind, state, by_view[view])


def test_info_and_validate(snapshots):
    snap = snapshots["forst-native"]
    info = statectl("info", "--json", str(snap.path))
    assert info.returncode == 0, info.stderr
    ops = {op["uid"]: op for op in json.loads(info.stdout)["operators"]}
    assert set(ops) == set(snap.expected["operators"])
    for uid, exp in snap.expected["operators"].items():
        assert {s["name"] for s in ops[uid]["states"] if s["scope"] == "keyed"} >= set(exp.get("keyed_state", {}))
    assert ops["proc"]["files"] > 0 and ops["proc"]["bytes"] > 0
    valid = statectl("validate", str(snap.path))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert valid.stdout.splitlines()[-1].startswith(f"valid: {snap.path} (")


# --- the SQL job ----------------------------------------------------------------------------

def test_sql_savepoint_handles(sql_snapshot):
    exp = sql_snapshot.expected
    assert (exp["state_backend"], exp["savepoint_format"]) == ("forst", "NATIVE")
    meta = parse_metadata(sql_snapshot.metadata.read_bytes())
    by_id = {op.operator_id: op for op in meta.operators}
    assert set(by_id) == {n["operator_id"] for n in exp["job_graph"]}
    for name, o in exp["operators"].items():
        keyed = [s.managed_keyed for s in by_id[o["operator_id"]].subtasks if s.managed_keyed is not None]
        assert len(keyed) == exp["parallelism"] and all(isinstance(h, handles.IncrementalRocksDB) for h in keyed), name
    for name, st in exp["statements"].items():
        assert st["received_output"] == st["expected_output"] and st["received_matches_model"], name


def test_sql_sst_files_are_read_directly(sql_snapshot, tmp_path):
    families = _direct_equals_rocksdb(sql_snapshot.path, tmp_path)
    assert len([label for label, found in families.items() if found]) == len(sql_snapshot.expected["operators"])


def test_sql_info_and_validate(sql_snapshot):
    assert statectl("info", str(sql_snapshot.path)).returncode == 0
    valid = statectl("validate", str(sql_snapshot.path))
    assert valid.returncode == 0, valid.stdout + valid.stderr
