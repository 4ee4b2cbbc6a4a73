"""RocksDB SST files read directly (`statefmt.rocksdb.sstread`, `.sstkernels`, and the
snapshot reader `statefmt.flink.native_sst`): blocks encoded here from the documented format,
whole tables, databases written by RocksDB itself (rocksdict), and the fallback to rocksdict.
The walks, merges and version rules are tested in both forms: compiled (`.sstkernels`) and
plain Python for a few blocks (`.sstwalk`), which also agree on blocks damaged anywhere."""

from __future__ import annotations

import os
import struct
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statectl.statefmt.flink.native_sst import SstSnapshot
from statectl.statefmt.flink.rocksdb_native import open_rocksdb_snapshot
from statectl.statefmt.rocksdb import sstkernels as K
from statectl.statefmt.rocksdb import sstwalk as W
from statectl.statefmt.rocksdb.sstread import SstFile, SstFormatError, UnsupportedSstFeature, read_entries
from support import sst_encode as E

# keys from a small alphabet share prefixes often, so shared-prefix encoding is exercised
KEYS = st.binary(min_size=1, max_size=10).map(lambda b: bytes(x % 3 + 0x61 for x in b))
VALUES = st.binary(max_size=12)


FORMS = [pytest.param(K, id="compiled"), pytest.param(W.PLAIN, id="python")]


def _as_array(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


# --- blocks ------------------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
@given(st.lists(st.tuples(KEYS, VALUES), max_size=40, unique_by=lambda kv: kv[0]),
       st.integers(1, 5), st.integers(1, 6))
def test_walk_blocks_rebuilds_every_key_and_value(form, entries, restart_interval, per_block):
    entries = sorted(entries)
    blocks, bounds = b"", []
    for i in range(0, len(entries), per_block):
        b = E.block(entries[i:i + per_block], restart_interval)
        bounds.append((len(blocks), len(blocks) + len(b)))
        blocks += b
    data = _as_array(blocks)
    found, error = form.walk_blocks(data, np.array(bounds, dtype=np.int64).reshape(-1, 2))
    assert error is None
    keys, key_offsets, value_starts, value_ends, _, _, block_firsts = found
    assert block_firsts.tolist() == list(range(0, len(entries), per_block)) + [len(entries)]
    got = [(keys[key_offsets[i]:key_offsets[i + 1]].tobytes(), blocks[value_starts[i]:value_ends[i]])
           for i in range(len(value_starts))]
    assert got == entries


@pytest.mark.parametrize("form", FORMS)
@given(st.lists(st.tuples(KEYS, st.integers(1, 70_000)), min_size=1, max_size=30, unique_by=lambda e: e[0]),
       st.integers(1, 4))
def test_walk_blocks_decodes_delta_encoded_index_handles(form, entries, restart_interval):
    entries = sorted(entries)
    handles, offset = [], 0
    for key, size in entries:
        handles.append((key, (offset, size)))
        offset += size + 5  # each block is followed by its 5-byte trailer
    data = _as_array(E.index_block(handles, restart_interval))
    found, error = form.walk_blocks(data, np.array([[0, len(data)]], dtype=np.int64), handles=True, delta=True)
    assert error is None
    keys, key_offsets, _, _, offsets, sizes, _ = found
    assert [keys[key_offsets[i]:key_offsets[i + 1]].tobytes() for i in range(len(sizes))] == [k for k, _ in entries]
    assert list(zip(offsets.tolist(), sizes.tolist())) == [h for _, h in handles]


@pytest.mark.parametrize("form", FORMS)
def test_walk_blocks_reports_a_broken_entry_and_a_hash_index(form):
    good = E.block([(b"abc", b"1"), (b"abd", b"2")], 16)
    cut = good[:5] + struct.pack("<II", 0, 1)  # the first entry runs past the restart array
    found, error = form.walk_blocks(_as_array(cut), np.array([[0, len(cut)]], dtype=np.int64))
    assert found is None and error == (K.BAD_ENTRY, 0, 0)
    hashed = good[:-4] + struct.pack("<I", 1 | 0x80000000)
    found, error = form.walk_blocks(_as_array(hashed), np.array([[0, len(hashed)]], dtype=np.int64))
    assert found is None and error == (K.HASH_INDEX, 0, len(hashed) - 4)


@given(st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=20, unique_by=lambda kv: kv[0]),
       st.integers(1, 4), st.booleans(), st.data())
def test_both_forms_agree_on_blocks_damaged_anywhere(entries, restart_interval, index, damage):
    """A byte changed or the block cut anywhere: the same entries or the same error, both forms;
    also as index blocks (block handles, delta-encoded or not)."""
    entries = sorted(entries)
    if index:
        offset, handles = 0, []
        for key, value in entries:
            handles.append((key, (offset, len(value) + 1)))
            offset += len(value) + 6
        block = E.index_block(handles, restart_interval)
    else:
        block = E.block(entries, restart_interval)
    at = damage.draw(st.integers(0, len(block) - 1))
    changed = block[:at] + bytes([block[at] ^ damage.draw(st.integers(1, 255))]) + block[at + 1:]
    for data in (block, changed, block[:at]):
        for delta in ((False, True) if index else (False,)):
            bounds = np.array([[0, len(data)]], dtype=np.int64)
            compiled = K.walk_blocks(_as_array(data), bounds, handles=index, delta=delta)
            small = W.PLAIN.walk_blocks(_as_array(data), bounds, handles=index, delta=delta)
            assert (compiled[0] is None) == (small[0] is None)
            if compiled[0] is None:
                assert tuple(map(int, compiled[1])) == small[1]
            else:
                for a, b in zip(compiled[0], small[0]):
                    assert a.dtype == b.dtype and a.tolist() == b.tolist()


# --- merging files and resolving versions ------------------------------------------------

KINDS = st.sampled_from([K.VALUE, K.VALUE, K.MERGE, K.MERGE, K.DELETION, K.SINGLE_DELETION])


def _model(entries) -> list[tuple[bytes, bytes]]:
    """What RocksDB reads: per user key, newest first, a value or deletion ends the operands."""
    out = []
    for key in sorted({e[0] for e in entries}):
        operands, base = [], None
        for _, _, kind, value in sorted((e for e in entries if e[0] == key), key=lambda e: -e[1]):
            if kind == K.VALUE:
                base = value
                break
            if kind == K.MERGE:
                operands.append(value)
            else:
                break
        if base is not None or operands:
            out.append((key, b",".join(([base] if base is not None else []) + operands[::-1])))
    return out


@pytest.mark.parametrize("form", FORMS)
@given(st.lists(st.lists(st.tuples(KEYS, KINDS, VALUES), max_size=12), min_size=1, max_size=4), st.randoms())
def test_merging_files_and_resolving_versions_match_rocksdb_rules(form, runs, random):
    seqs = list(range(1, sum(map(len, runs)) + 1))
    random.shuffle(seqs)
    entries, it = [], iter(seqs)
    sorted_runs = []
    for run in runs:
        one = sorted(((k, next(it), kind, v) for k, kind, v in run), key=lambda e: (e[0], -e[1]))
        sorted_runs.append(one)
        entries += one
    flat = [e for run in sorted_runs for e in run]
    keys = b"".join(e[0] for e in flat)
    lengths = np.array([len(e[0]) for e in flat], dtype=np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    values = b"".join(e[3] for e in flat)
    v_len = np.array([len(e[3]) for e in flat], dtype=np.int64)
    v_ends = np.cumsum(v_len)
    seq = np.array([e[1] for e in flat], dtype=np.uint64)
    runs_at = np.cumsum([0] + [len(r) for r in sorted_runs])
    order = form.merge_runs(_as_array(keys), starts, ends, seq, runs_at)
    assert [flat[i][:2] for i in order] == sorted((e[:2] for e in flat), key=lambda e: (e[0], -e[1]))
    found, bad = form.live(_as_array(keys), starts, ends, np.array([e[2] for e in flat], dtype=np.uint8),
                        _as_array(values), v_ends - v_len, v_ends, order, ord(","))
    assert bad is None
    firsts, value_starts, value_ends, joined = found
    both = values + joined.tobytes()
    got = [(flat[f][0], both[s:e]) for f, s, e in zip(firsts, value_starts, value_ends)]
    assert got == _model(entries)


@pytest.mark.parametrize("form", FORMS)
def test_live_refuses_an_unknown_value_type(form):
    keys = _as_array(b"ab")
    found, bad = form.live(keys, np.array([0, 1]), np.array([1, 2]), np.array([K.VALUE, 0x11], dtype=np.uint8),
                           _as_array(b"xy"), np.array([0, 1]), np.array([1, 2]), np.array([0, 1]), ord(","))
    assert found is None and bad == 1


# --- whole tables --------------------------------------------------------------------------

def _write(tmp_path, data: bytes, name: str = "000007.sst") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(st.lists(st.tuples(KEYS, st.integers(0, 1 << 40), KINDS, VALUES), max_size=30,
                unique_by=lambda e: (e[0], e[1])),
       st.booleans(), st.sampled_from([E.CRC32C, E.XXH3]), st.integers(1, 5), st.integers(1, 4))
def test_a_table_reads_back_every_internal_entry(tmp_path, entries, snappy, checksum, per_block, restarts):
    entries = sorted(entries, key=lambda e: (e[0], -e[1]))
    path = _write(tmp_path, E.table(entries, snappy=snappy, checksum_type=checksum, block_entries=per_block,
                                    restart_interval=restarts, column_family="events"))
    with SstFile(path) as t:
        assert (t.column_family, t.format_version, t.checksum, t.num_entries) == ("events", 5, checksum, len(entries))
        got = t.entries()
    assert [(got.keys[got.key_starts[i]:got.key_ends[i]].tobytes(), int(got.seqs[i]), int(got.kinds[i]),
             got.values[got.value_starts[i]:got.value_ends[i]].tobytes()) for i in range(len(got))] == entries


def _entries(n: int) -> list[tuple[bytes, int, int, bytes]]:
    return [(bytes([g]) + b"key-%03d" % i, 100 + i, K.VALUE, b"v%d" % i) for i, g in
            zip(range(n), sorted(i % 4 for i in range(n)))]


def test_a_key_group_range_reads_only_the_blocks_that_can_hold_it(tmp_path):
    path = _write(tmp_path, E.table(_entries(40), block_entries=3))
    with SstFile(path) as t:
        assert len(t.block_offsets) == 14
        chosen = t.blocks_in_range(b"\x01", b"\x02")  # key group 1: entries 10..19
        assert chosen.tolist() == [3, 4, 5, 6]
        got = t.entries(b"\x01", b"\x02")
        keys = [got.keys[s:e].tobytes() for s, e in zip(got.key_starts, got.key_ends)]
    assert keys[0] == b"\x00key-009" and keys[-1] == b"\x02key-020"  # whole blocks; the caller trims


def _blocks_one_by_one(t: SstFile, start: bytes | None, stop: bytes | None) -> list[int]:
    """The rule `blocks_in_range` applies, block by block: out when its separator's user key
    (the internal key less its 8 bytes of sequence and type) is below *start*, or when the
    previous block's is at least *stop*."""
    seps = [t._index_keys[t._index_key_offsets[i]:t._index_key_offsets[i + 1]].tobytes()[:-8]
            for i in range(len(t.block_offsets))]
    return [i for i, p in enumerate(seps)
            if not (start is not None and p < start) and not (stop is not None and i and seps[i - 1] >= stop)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(KEYS, min_size=1, max_size=60, unique=True), st.integers(1, 4), st.integers(1, 3),
       st.one_of(st.none(), KEYS), st.one_of(st.none(), KEYS))
def test_a_key_range_chooses_the_blocks_the_rule_says(tmp_path, keys, per_block, partition_entries, start, stop):
    """The blocks kept are found by binary search over the sorted separators: exactly those the
    block-by-block rule keeps, flat and partitioned indexes alike; and every key in the range
    lies in a kept block."""
    entries = [(k, 7, K.VALUE, b"v") for k in sorted(keys)]
    for name, options in (("flat.sst", {}), ("partitioned.sst", dict(partition_entries=partition_entries))):
        with SstFile(_write(tmp_path, E.table(entries, block_entries=per_block, **options), name)) as t:
            chosen = t.blocks_in_range(start, stop).tolist()
            assert chosen == (list(range(len(t.block_offsets))) if start is None and stop is None
                              else _blocks_one_by_one(t, start, stop))
            inside = [k for k in sorted(keys) if (start is None or k >= start) and (stop is None or k < stop)]
            kept = read_entries([t], [(start, stop)])[0]
            got = {kept.keys[a:b].tobytes() for a, b in zip(kept.key_starts, kept.key_ends)}
            assert set(inside) <= got


@pytest.mark.parametrize("user_keys", [False, True])
def test_a_shortened_separator_keeps_the_blocks_of_the_keys_it_prefixes(tmp_path, user_keys):
    """RocksDB shortens separators (``k\\x02`` parts ``k\\x01`` from ``k\\x02\\x01``), internal
    keys (followed by an 8-byte tag, here ``\\x16\\xff...``) or user keys as the table's
    properties say. Compared as whole user keys, the shortened one keeps the block holding
    ``k\\x02\\x01``; compared on the bounds' length, its tag's first byte would have put the
    block out."""
    keys = [b"k\x01", b"k\x02\x01", b"k\x03"]
    tag = (lambda k: k) if user_keys else (lambda k: E.internal_key(k, (1 << 56) - 1, 0x16))
    separators = [tag(b"k\x02"), tag(b"k\x02\x02"), tag(b"k\x03")]
    properties = {b"rocksdb.index.key.is.user.key": b"\x01"} if user_keys else None
    data = E.table([(k, 7, K.VALUE, b"v") for k in keys], block_entries=1, separators=separators,
                   properties=properties)
    with SstFile(_write(tmp_path, data)) as t:
        assert t.blocks_in_range(b"k\x02\x01", b"k\x02\x02").tolist() == [1]
        assert t.blocks_in_range(b"k\x02\x00", b"k\x03").tolist() == [1, 2]
        got = t.entries(b"k\x02\x01", b"k\x02\x02")
        assert got.keys[got.key_starts[0]:got.key_ends[0]].tobytes() == b"k\x02\x01"


def test_a_bad_checksum_is_one_line_naming_the_file_and_block(tmp_path):
    data = bytearray(E.table(_entries(8), snappy=False, block_entries=4))
    data[3] ^= 0xFF
    path = _write(tmp_path, bytes(data))
    first_block = E.block([(E.internal_key(k, s, t), v) for k, s, t, v in _entries(8)[:4]], 2)
    stored = E.checksum(E.XXH3, first_block, 0)
    computed = E.checksum(E.XXH3, bytes(data[:len(first_block)]), 0)
    with SstFile(path) as t, pytest.raises(SstFormatError) as e:
        t.entries()
    assert str(e.value) == f"{path}: block at offset 0: XXH3 checksum {stored:#010x} stored, {computed:#010x} computed"


@pytest.mark.parametrize("partition_entries", [1, 2, 3, 50])
def test_a_partitioned_index_reads_like_a_flat_one(tmp_path, partition_entries):
    """kTwoLevelIndexSearch (ForSt's default): the top-level index names index partitions, whose
    data blocks, in order, are those of the flat index; key ranges choose the same blocks."""
    flat = _write(tmp_path, E.table(_entries(40), block_entries=3), "000007.sst")
    two_level = _write(tmp_path, E.table(_entries(40), block_entries=3, partition_entries=partition_entries),
                       "000008.sst")
    with SstFile(flat) as f, SstFile(two_level) as t:
        assert (f.index_type, t.index_type) == (0, 2)
        assert t.block_offsets.tolist() == f.block_offsets.tolist() and len(t.block_offsets) == 14
        assert t.block_sizes.tolist() == f.block_sizes.tolist()
        assert t.first_index_key == f.first_index_key
        assert t.blocks_in_range(b"\x01", b"\x02").tolist() == [3, 4, 5, 6]
        a, b = f.entries(), t.entries()
        assert a.keys.tobytes() == b.keys.tobytes() and a.values.tobytes() == b.values.tobytes()
        assert len(b) == 40


@pytest.mark.parametrize("change, message", [
    (dict(compression=7), "{path}: data block at offset 0 has compression type 7"),
    (dict(extra_meta={b"rocksdb.range_del": E.varint(0) + E.varint(0)}), "{path}: range deletions"),
    (dict(properties={b"rocksdb.comparator": b"rocksdb.ReverseBytewiseComparator"}),
     "{path}: comparator rocksdb.ReverseBytewiseComparator"),
    (dict(properties={b"rocksdb.external_sst_file.version": struct.pack("<I", 2)}),
     "{path}: an ingested (external) file"),
])
def test_table_features_the_reader_does_not_decode_are_named(tmp_path, change, message):
    path = _write(tmp_path, E.table(_entries(6), **change))
    with pytest.raises(UnsupportedSstFeature) as e:
        with SstFile(path) as t:
            t.entries()
    assert str(e.value) == message.format(path=path)


def test_truncated_and_foreign_files_are_one_line_errors(tmp_path):
    data = E.table(_entries(6))
    short = _write(tmp_path, data[:-60], "short.sst")
    with pytest.raises(SstFormatError) as e:
        SstFile(short)
    magic = struct.unpack("<Q", data[-68:-60])[0]
    assert str(e.value) == f"{short}: not a readable RocksDB table: unknown magic number {magic:#018x}"
    tiny = _write(tmp_path, b"CURRENT\n", "tiny.sst")
    with pytest.raises(SstFormatError) as e:
        SstFile(tiny)
    assert str(e.value) == f"{tiny}: not a readable RocksDB table: 8 bytes, shorter than a footer"
    v6 = bytearray(data)
    v6[-12:-8] = struct.pack("<I", 6)
    newer = _write(tmp_path, bytes(v6), "v6.sst")
    with pytest.raises(UnsupportedSstFeature) as e:
        SstFile(newer)
    assert str(e.value) == f"{newer}: table format version 6"


# --- databases written by RocksDB itself ---------------------------------------------------

def _database(folder, batches, compression: str, checksum: str, delete_range=None):
    """A RocksDB database (format version 5) with a column family "st": each batch of puts
    (value) and deletes (None) flushed into its own level-0 file, so files overlap."""
    from rocksdict import (BlockBasedOptions, ChecksumType, DBCompressionType, Options, Rdict)

    table = BlockBasedOptions()
    table.set_format_version(5)
    table.set_checksum_type(getattr(ChecksumType, checksum)())
    table.set_block_restart_interval(3)
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_disable_auto_compactions(True)
    opts.set_block_based_table_factory(table)
    opts.set_compression_type(getattr(DBCompressionType, compression)())
    db = Rdict(str(folder), opts)
    cf = db.create_column_family("st", opts)
    for batch in batches:
        for key, value in batch:
            if value is None:
                cf.delete(key)
            else:
                cf.put(key, value)
        if delete_range is not None:
            cf.delete_range(*delete_range)
        db.flush()
    del cf
    db.close()
    return [(name, os.path.join(folder, name)) for name in sorted(os.listdir(folder))
            if name != "rocksdict-config.json" and not name.endswith(".log") and name != "LOCK"]


def _both(files, tmp_path, key_groups=None):
    kw = dict(key_groups=key_groups, max_parallelism=128 if key_groups else None)
    with SstSnapshot(files, "test") as direct:
        got = {cf: list(direct.interleaved(cf, **kw)) for cf in direct.column_families}
        assert direct.column_families in ([], ["st"])
    with open_rocksdb_snapshot(files, workdir=tmp_path) as db:
        want = {cf: list(db.interleaved(cf, **kw)) for cf in db.column_families}
    norm = lambda chunks: (b"".join(d for d, _ in chunks), [int(x) for _, n in chunks for x in n])  # noqa: E731
    return ({cf: norm(c) for cf, c in got.items() if c}, {cf: norm(c) for cf, c in want.items() if c})


OPS = st.lists(st.lists(st.tuples(st.binary(min_size=1, max_size=3).map(lambda b: bytes([b[0] % 4]) + b[1:]),
                                  st.one_of(st.none(), st.binary(max_size=6))), max_size=25),
               min_size=1, max_size=4)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
@given(OPS, st.sampled_from(["snappy", "none"]), st.sampled_from(["crc32c", "xxh3"]),
       st.sampled_from([None, (1, 2), (0, 2)]))
def test_direct_reading_equals_rocksdb_on_overlapping_files_with_deletions(tmp_path_factory, batches,
                                                                          compression, checksum, key_groups):
    tmp = tmp_path_factory.mktemp("db")
    files = _database(tmp / "db", batches, compression, checksum)
    got, want = _both(files, tmp, key_groups)
    assert got == want
    live = {}
    for key, value in (kv for batch in batches for kv in batch):
        live[key] = value
    in_range = {k: v for k, v in live.items() if v is not None and (key_groups is None or key_groups[0] <= k[0] <= key_groups[1])}
    assert sum(len(n) for _, n in got.values()) == 2 * len(in_range)


def test_a_range_deletion_falls_back_to_rocksdb(tmp_path):
    from statectl.statefmt.flink.savepoint import _native_entries

    files = _database(tmp_path / "db", [[(b"\x00a", b"1"), (b"\x01b", b"2"), (b"\x02c", b"3")]],
                      "snappy", "xxh3", delete_range=(b"\x01", b"\x02"))
    with pytest.raises(UnsupportedSstFeature) as e:
        SstSnapshot(files, "test")
    assert str(e.value).endswith(": range deletions")
    split = SimpleNamespace(max_parallelism=128, operator_id="op", subtask=0)
    (entries,) = _native_entries(files, str(tmp_path), {"st"}, split, [(0, 127)])
    data, key_starts, key_ends, value_starts, value_ends = entries.pop("st")
    assert entries == {}
    assert [(data[a:b], data[c:d]) for a, b, c, d in zip(key_starts, key_ends, value_starts, value_ends)] == [
        (b"\x00a", b"1"), (b"\x02c", b"3")]
    # read in pieces: the ranges rocksdict reads are read at once, in one piece
    (entries,) = _native_entries(files, str(tmp_path), {"st"}, split, [(0, 0), (1, 1), (2, 127)])
    data, key_starts, key_ends, *_ = entries["st"]
    assert [data[a:b] for a, b in zip(key_starts, key_ends)] == [b"\x00a", b"\x02c"]
