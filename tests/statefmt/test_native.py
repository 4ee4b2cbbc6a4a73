"""The native format: RocksDB snapshots in a savepoint, restore at any parallelism, incremental sharing."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from support.builders import build_full_savepoint
from support.backend_states import (
    BACKENDS,
    MAX_P,
    _canon,
    expected_rows,
    expected_timers,
    fire_all,
    handles,
    state_of,
)
from statectl.backends import HeapBackend, RocksDBBackend, commit_snapshots
from statectl.statefmt.canonical import keyed_schema, read_file
from statectl.statefmt.errors import IntegrityError, MetadataError
from statectl.statefmt.metadata import decode
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.validate import validate


def native_copy(sp, out, parallelism):
    """*sp* restored in RocksDB at *parallelism* and snapshotted natively."""
    snaps, backends = [], []
    for op in ("proc", "src"):
        for i in range(parallelism):
            b = RocksDBBackend.restore(sp, op, subtask=i, parallelism=parallelism)
            snaps.append(b.snapshot(out, format="rocksdb"))
            backends.append(b)
    committed = commit_snapshots(out, snaps)
    return committed, backends


@pytest.fixture(scope="module")
def savepoints(tmp_path_factory):
    base = tmp_path_factory.mktemp("native")
    canonical = build_full_savepoint(base / "canonical", parallelism=3, max_parallelism=MAX_P)
    nat, backends = native_copy(canonical, base / "native", 3)
    for b in backends:
        b.close()
    return canonical, load(nat.location)


def test_native_savepoint_is_described_and_valid(savepoints):
    _, nat = savepoints
    proc = nat.operator("proc")
    assert proc.format == "rocksdb" and nat.operator("src").format == "canonical"
    assert not proc.keyed.timers
    names = {f.name for f in proc.keyed.files}
    assert "CURRENT" in names and any(n.endswith(".sst") for n in names)
    assert {f.key_groups for f in proc.keyed.files} == {(0, 5), (6, 10), (11, 15)}
    report = validate(nat.location)
    assert report.valid, report.problems
    # the codec round trip keeps every field, the file names included
    from statectl.statefmt.metadata import encode
    assert decode(encode(nat)) == nat


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 3, 5])
def test_native_restore_at_any_parallelism(savepoints, backend, parallelism):
    _, nat = savepoints
    seen, fired = {}, set()
    for i in range(parallelism):
        with backend.restore(nat, "proc", subtask=i, parallelism=parallelism) as b:
            got = state_of(b)
            assert not set(got) & set(seen)
            seen.update(got)
            fired |= fire_all(b)
    assert seen == expected_rows()
    assert fired == expected_timers()


def test_native_to_canonical_is_the_same_table(savepoints, tmp_path):
    canonical, nat = savepoints
    snaps = []
    for i in range(2):
        with RocksDBBackend.restore(nat, "proc", subtask=i, parallelism=2) as b:
            snaps.append(b.snapshot(tmp_path / "c"))
    sp = load(commit_snapshots(tmp_path / "c", snaps).location)

    def table(s):
        k = s.operator("proc").keyed
        return pa.concat_tables([read_file(file_location(s, f.ref), f, keyed_schema(k)) for f in k.files])
    keys = ("_key_group", "user", "shard", "namespace")
    assert _canon(table(sp), keys) == _canon(table(canonical), keys)


def test_incremental_checkpoints_share_unchanged_sst_files(savepoints, tmp_path):
    _, nat = savepoints
    backends = [RocksDBBackend.restore(nat, "proc", subtask=i, parallelism=3) for i in range(3)]
    try:
        # change one key in subtask 0 only
        b0 = backends[0]
        key, ns = next(k for k in expected_rows() if b0.first_group <= b0.key_group_of(k[0]) <= b0.last_group)
        b0.set_current_key(key)
        b0.set_current_namespace(None if ns is None else {"start": ns[0], "end": ns[1]})
        handles(b0)["count"].update(123456)
        cp1 = commit_snapshots(tmp_path / "cp1", [b.snapshot(tmp_path / "cp1", format="rocksdb")
                                                  for b in backends])
        for b in backends:
            b.notify_committed(cp1)
        files = cp1.operator("proc").keyed.files
        shared = [f for f in files if f.ref.savepoint == nat.savepoint_id]
        own_sst = [f for f in files if f.ref.savepoint is None and f.name.endswith(".sst")]
        # subtasks 1 and 2 changed nothing: all their SST files are the base's
        assert {f.key_groups for f in shared} >= {(6, 10), (11, 15)}
        assert all(f.key_groups == (0, 5) for f in own_sst) and own_sst
        assert [e.savepoint_id for e in cp1.lineage] == [nat.savepoint_id]
        # a second checkpoint with no change shares everything, lineage stays flat
        cp2 = commit_snapshots(tmp_path / "cp2", [b.snapshot(tmp_path / "cp2", format="rocksdb")
                                                  for b in backends])
        assert all(f.ref.savepoint is not None for f in cp2.operator("proc").keyed.files
                   if f.name.endswith(".sst"))
        assert {e.savepoint_id for e in cp2.lineage} == {nat.savepoint_id, cp1.savepoint_id}
        non_incremental = backends[1].snapshot(tmp_path / "full", format="rocksdb", incremental=False)
        assert all(f.ref.savepoint is None for f in non_incremental.keyed.files)
    finally:
        for b in backends:
            b.close()
    # the incremental checkpoint restores to the changed state
    expected = expected_rows()
    expected[(key, ns)] = dict(expected[(key, ns)], count=123456)
    seen = {}
    for i in range(2):
        with HeapBackend.restore(load(cp2.location), "proc", subtask=i, parallelism=2) as b:
            seen.update(state_of(b))
    assert seen == expected
    assert validate(cp2.location).valid


def test_damaged_native_file_is_named(savepoints, tmp_path):
    import shutil
    _, nat = savepoints
    copy = tmp_path / "copy"
    shutil.copytree(nat.location, copy)
    sp = load(copy)
    sst = next(f for f in sp.operator("proc").keyed.files if f.name.endswith(".sst"))
    path = copy / sst.ref.path
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(IntegrityError, match=sst.name):
        for i in range(3):
            RocksDBBackend.restore(sp, "proc", subtask=i, parallelism=3).close()


def test_native_metadata_rules(savepoints):
    _, nat = savepoints
    doc = json.loads((load(nat.location) and open(f"{nat.location}/_metadata").read()))
    proc = next(o for o in doc["operators"] if o["uid"] == "proc")
    del proc["keyed"]["files"][0]["name"]
    with pytest.raises(MetadataError, match="name is missing"):
        decode(json.dumps(doc).encode())
    proc["keyed"]["files"][0]["name"] = "../x"
    with pytest.raises(Exception, match="may not contain"):
        decode(json.dumps(doc).encode())
    proc["format"] = "leveldb"
    with pytest.raises(MetadataError, match="not supported"):
        decode(json.dumps(doc).encode())
