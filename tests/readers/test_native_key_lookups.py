"""Key lookups in native RocksDB snapshots read only the SST blocks that can hold their keys
(`statefmt/flink/key_prefix.py`): the rows are exactly those of the whole table for those keys,
for every key type of the fixtures (Java longs, strings and tuples, SQL key rows), with keys
that are absent, and when a key's bytes are not the ones written (then its key group is read)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from statectl.readers.local import local_table
from statectl.readers.resolve import KEYED, TIMERS, TableChoice
from statectl.readers.sources import table_source
from statectl.statefmt.flink.key_prefix import entry_prefixes
from statectl.statefmt.flink.native_sst import SstSnapshot
from statectl.statefmt.flink.savepoint import read_split
from statectl.statefmt.flink.streamio import native_files, split_base
from statectl.statefmt.flink.streams import prefix_bytes
from statectl.statefmt.formats import load

FIXTURES = Path(__file__).parents[1] / "fixtures"
NATIVE = [FIXTURES / "flink-dev" / "long-rocksdb-native" / "savepoint",
          FIXTURES / "flink-dev" / "tuple-rocksdb-native" / "savepoint",
          FIXTURES / "flink-sql-probe" / "rocksdb-native",
          FIXTURES / "flink-realworld-dev" / "realworld-rocksdb-native" / "savepoint",
          FIXTURES / "flink-avro-dev" / "avro-rocksdb-native" / "savepoint"]


def _rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def _key(row: dict, names: list[str]) -> tuple:
    return tuple(row[n] for n in names)


def _entries_start_with_its_bytes(sp, op, key: tuple, workdir: str) -> bool:
    """Whether some column family of the key's subtask has entries starting with the bytes
    `entry_prefixes` gives the key (else a lookup would read its key group: right, but slow)."""
    source = table_source(sp, op)
    (group,) = source.key_groups([key])
    (split,) = source.splits(KEYED, [group])
    prefixes = entry_prefixes(source.info.key_type, [key], [group], op.max_parallelism)
    with SstSnapshot(native_files(split_base(split), split.handle, workdir), "of the test") as db:
        return bool(prefixes) and any(db.live_entries(cf, (group, group), op.max_parallelism, prefixes)
                                      for cf in db.column_families if not cf.startswith("_timer_state"))


@pytest.mark.parametrize("path", NATIVE, ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_a_lookup_gives_the_keys_rows_of_the_whole_table(path, tmp_path):
    sp = load(str(path))
    for op in (op for op in sp.operators if op.keyed is not None and not op.unreadable):
        names = op.keyed.key_names
        first = _key(local_table(sp, TableChoice(op, KEYED), limit=1).to_pylist()[0], names)
        assert _entries_start_with_its_bytes(sp, op, first, str(tmp_path)), op.label
        for kind in (KEYED, TIMERS):
            whole = local_table(sp, TableChoice(op, kind)).to_pylist()
            keys = sorted({_key(r, names) for r in whole}, key=repr)[:4]
            if kind == KEYED:
                assert keys, op.label
            for chosen in ([k] for k in keys):
                got = local_table(sp, TableChoice(op, kind, (), tuple(chosen)))
                want = [r for r in whole if _key(r, names) in chosen]
                assert _rows(got) == _rows(pa.Table.from_pylist(want, got.schema)), (op.label, kind, chosen)
            if len(keys) > 1:  # several keys at once
                got = local_table(sp, TableChoice(op, kind, (), tuple(keys)))
                assert got.num_rows == sum(_key(r, names) in keys for r in whole)


def _long_operator():
    sp = load(str(NATIVE[0]))
    op = sp.operator("lk-proc")
    source = table_source(sp, op)
    key = local_table(sp, TableChoice(op, KEYED)).column("key")[0].as_py()
    (group,) = source.key_groups([(key,)])
    split = next(s for s in source.splits(KEYED, [group]))
    return source, split, key, group


def test_a_keys_prefix_reads_its_entries_alone_not_its_key_group(tmp_path):
    source, split, key, group = _long_operator()
    prefixes = entry_prefixes(source.info.key_type, [(key,)], [group], split.max_parallelism)
    group_bytes = group.to_bytes(prefix_bytes(split.max_parallelism), "big")
    assert prefixes == (group_bytes + key.to_bytes(8, "big", signed=True),)
    width_one = (group, group)
    with SstSnapshot(native_files(split_base(split), split.handle, str(tmp_path)), "of the test") as db:
        for cf in db.column_families:
            if cf.startswith("_timer_state"):
                continue
            whole = db.live_entries(cf, width_one, split.max_parallelism)
            narrowed = db.live_entries(cf, width_one, split.max_parallelism, prefixes)
            if whole is None:
                continue
            keys = [whole.data[a:b] for a, b in zip(whole.key_starts, whole.key_ends)]
            mine = [k for k in keys if k.startswith(prefixes[0])]
            assert len(keys) > len(mine)  # its key group holds other keys too
            got = [] if narrowed is None else [narrowed.data[a:b] for a, b in
                                                zip(narrowed.key_starts, narrowed.key_ends)]
            assert got == mine, cf


def test_a_key_written_in_other_bytes_is_still_found_through_its_key_group():
    """A prefix no entry starts with (here: the key's bytes with a wrong last byte) finds nothing
    in any column family: the key group is read, and the caller keeps the key's rows."""
    source, split, key, group = _long_operator()
    (right,) = entry_prefixes(source.info.key_type, [(key,)], [group], split.max_parallelism)
    wrong = right[:-1] + bytes([right[-1] ^ 0xFF])
    plain = pa.Table.from_batches(list(read_split(split, KEYED, {group})))
    narrowed = pa.Table.from_batches(list(read_split(split, KEYED, {group}, prefixes=(right,))))
    fallen_back = pa.Table.from_batches(list(read_split(split, KEYED, {group}, prefixes=(wrong,))))
    assert _rows(fallen_back) == _rows(plain)
    assert _rows(narrowed) == _rows(plain.filter(pa.compute.equal(plain.column("key"), key)))


def test_keys_of_unknown_bytes_are_not_narrowed():
    """A Kryo, POJO or Avro key's bytes may hold a class tag of the job's: its key group is read."""
    from statectl.statefmt.flink import types as T

    assert entry_prefixes(T.Pojo("x.Y", ()), [(1,)], [3], 128) == ()
    assert entry_prefixes(T.Scalar("long"), [("not a number",)], [3], 128) == ()
