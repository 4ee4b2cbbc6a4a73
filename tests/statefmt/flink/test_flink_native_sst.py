"""Every native RocksDB snapshot the suite has (the dev fixtures, and the native savepoints
and incremental checkpoints made by real Flink 1.17, 1.20 and 2.3) read from its SST files
directly gives exactly the entries RocksDB itself gives (rocksdict), split by split."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from statectl.statefmt.flink import savepoint as S
from statectl.statefmt.flink.handles import IncrementalRocksDB
from statectl.statefmt.flink.native_sst import SstSnapshot
from statectl.statefmt.flink.rocksdb_native import open_rocksdb_snapshot
from support.flink_shapes import INCREMENTAL, METADATA_VERSION, SHAPES

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
JOB_SHAPES = {"rocksdb-native": SHAPES["rocksdb-native"], "rocksdb-incremental-checkpoint": INCREMENTAL}


def _chunks(chunks) -> tuple[bytes, list[int]]:
    chunks = list(chunks)
    return b"".join(d for d, _ in chunks), [int(x) for _, n in chunks for x in n]


def _compare(path: Path, tmp_path) -> dict[str, int]:
    """Direct and rocksdict entries of every native split of the snapshot at *path*, which must
    be equal; the number of entries per column family."""
    counts: dict[str, int] = {}
    splits = [s for op in S.open_flink_savepoint(path).operators for s in op.keyed_splits
              if isinstance(s.handle, IncrementalRocksDB)]
    assert splits, f"{path} has no native RocksDB split"
    for split in splits:
        files = S.native_files(S.split_base(split), split.handle, str(tmp_path))
        kw = dict(key_groups=split.key_groups, max_parallelism=split.max_parallelism)
        with SstSnapshot(files, str(path)) as direct:
            got = {cf: _chunks(direct.interleaved(cf, **kw)) for cf in direct.column_families}
        with open_rocksdb_snapshot(files, workdir=tmp_path) as db:
            want = {cf: _chunks(db.interleaved(cf, **kw)) for cf in db.column_families}
        got = {cf: c for cf, c in got.items() if c[1]}
        want = {cf: c for cf, c in want.items() if c[1]}
        assert got == want, f"{path} operator {split.operator_id} subtask {split.subtask}"
        for cf, (_, lengths) in got.items():
            counts[cf] = counts.get(cf, 0) + len(lengths) // 2
    return counts


@pytest.mark.parametrize("fixture", ["long-rocksdb-native", "tuple-rocksdb-native"])
def test_dev_fixtures(fixture, tmp_path):
    counts = _compare(FIXTURES / fixture / "savepoint", tmp_path)
    assert sum(counts.values()) > 0 and len(counts) >= 4


@pytest.mark.parametrize("version", sorted(METADATA_VERSION))
def test_snapshots_made_by_real_flink(flink_snapshots, version, tmp_path):
    made = flink_snapshots(version, list(JOB_SHAPES.values()))
    for shape, snapshot in zip(JOB_SHAPES, made):
        counts = _compare(Path(snapshot.path), tmp_path)
        assert sum(counts.values()) > 0, shape


# --- a damaged SST file: one line naming the file and block ----------------------------------

def _damaged_copy(tmp_path) -> tuple[Path, str, str]:
    """A copy of the Long-keyed native fixture with one byte of lk-proc's first data block of
    one SST file flipped; the expected error line (savepoint as SP)."""
    import xxhash

    from statectl.statefmt.rocksdb.sstread import XXH3_LAST_BYTE_PRIME, SstFile

    sp = tmp_path / "sp"
    shutil.copytree(FIXTURES / "long-rocksdb-native" / "savepoint", sp)
    split = S.open_flink_savepoint(sp).operator("lk-proc").keyed_splits[0]
    def column_family(location) -> str:
        with SstFile(location) as table:
            return table.column_family

    local, location = next((n, f) for n, f in S.native_files(S.split_base(split), split.handle, str(tmp_path))
                           if n.endswith(".sst") and column_family(f) == "count")
    with SstFile(location) as table:
        offset, size = int(table.block_offsets[0]), int(table.block_sizes[0])
    path = Path(location.path)
    data = bytearray(path.read_bytes())
    data[offset + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    kind = data[offset + size]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    computed = (xxhash.xxh3_64_intdigest(bytes(data[offset:offset + size])) & 0xFFFFFFFF) \
        ^ ((kind * XXH3_LAST_BYTE_PRIME) & 0xFFFFFFFF)
    line = (f"SP/{path.name} ({local}): block at offset {offset}: XXH3 checksum {stored:#010x} stored, "
            f"{computed:#010x} computed")
    return sp, line, local


def test_a_damaged_block_is_an_error_naming_the_file(tmp_path):
    from statectl.statefmt.rocksdb.sstread import SstFormatError

    sp, line, _ = _damaged_copy(tmp_path)
    with pytest.raises(SstFormatError) as e:
        S.keyed_table(S.open_flink_savepoint(sp).operator("lk-proc"))
    assert str(e.value).replace(str(sp), "SP") == line


def test_a_damaged_block_through_the_cli_is_one_line(tmp_path):
    from support.cli_runner import statectl

    sp, line, _ = _damaged_copy(tmp_path)
    result = statectl("read", str(sp), "--uid", "lk-proc", "--state", "count", "-f", "jsonl")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert [x.replace(str(sp), "SP") for x in result.stderr.strip().splitlines()] == [f"error: {line}"]


def test_a_key_filter_reads_only_its_key_groups_span():
    """`read_split(..., key_groups)` on a native split reads the span of those groups only
    (`_narrowed`), and gives exactly the full read's rows of those groups."""
    import pyarrow.compute as pc

    assert S._narrowed((0, 85), {3, 40}) == (3, 40)
    assert S._narrowed((86, 170), {3, 40}) == (86, 40)  # empty: nothing is read
    assert S._narrowed((0, 85), None) == (0, 85)
    op = S.open_flink_savepoint(FIXTURES / "long-rocksdb-native" / "savepoint").operator("lk-proc")
    split = op.keyed_splits[0]
    full = pa_table(S.read_split(split))
    groups = sorted(set(full.column("_key_group").to_pylist()))
    for chosen in ({groups[0]}, {groups[1], groups[-1]}):
        part = pa_table(S.read_split(split, key_groups=chosen))
        expected = full.filter(pc.is_in(full.column("_key_group"), value_set=pa.array(sorted(chosen), pa.int32())))
        assert part.num_rows > 0 and part.to_pylist() == expected.to_pylist()
    assert sum(b.num_rows for b in S.read_split(op.keyed_splits[1], key_groups={groups[0]})) == 0


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_splits_read_in_pieces_give_the_rows_of_one_read(fixture, monkeypatch):
    """With tiny pieces, every keyed split (canonical stream or native RocksDB) is decoded
    key-group range by key-group range (a native snapshot's files opened once) and gives the
    rows and timers of reading it whole; a key filter reads the pieces of its groups only."""
    op = next(op for op in S.open_flink_savepoint(FIXTURES / fixture / "savepoint").operators
              if op.keyed_splits and any(op.keyed_schema.field(i).name not in ("key", "_key_group", "namespace")
                                         for i in range(len(op.keyed_schema))))
    whole = {t: [pa_table(S.read_split(s, t)).to_pylist() for s in op.keyed_splits] for t in ("keyed", "timers")}
    monkeypatch.setattr(S, "PIECE_BYTES", 64)
    assert all(len(S._pieces(s)) > 1 for s in op.keyed_splits) or "hashmap-native" in fixture
    for table, rows in whole.items():
        assert [pa_table(S.read_split(s, table)).to_pylist() for s in op.keyed_splits] == rows, table
    first = whole["keyed"][0][0]["_key_group"]
    filtered = pa_table(S.read_split(op.keyed_splits[0], key_groups={first})).to_pylist()
    assert filtered == [r for r in whole["keyed"][0] if r["_key_group"] == first]


def pa_table(batches):
    return pa.Table.from_batches(list(batches))
