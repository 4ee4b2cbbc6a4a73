"""A SQL operator's state written again by the Flink writer's task side, unchanged, is the
stream Flink wrote, byte for byte: each keyed SQL operator of the suite's RocksDB canonical SQL
savepoints (Flink 1.20 and 2.3) and of the probe is read into its tables by statectl, its
rows given to the writer's encoders as the write's inputs (`EntryEncoder`: key rows placed
by their bytes' hash, values, map entries, timers), sorted by key group and key as the
write's shuffle sorts them, and assembled by the stream builder under the header copied from
the base (its serializer snapshots as Flink wrote them) (`tests/support/flink_sql_entries.py`).
No Spark: the tasks' code itself.

A rescale moves a SQL operator's entries by their bytes instead (`statefmt/flink/regroup.py`): at the
operator's own max parallelism they assemble into the stream RocksDB wrote (a heap backend's
order is its tables'); at another, they are the very entry rows the encoders make of the
tables (canonical heap and RocksDB, with TTL too; native RocksDB and ForSt snapshots).
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from support import flink_job
from support.flink_sql_entries import SplitRewrite, sql_keyed_splits, sql_savepoints
from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.regroup import regrouped_entries
from statectl.statefmt.flink.savepoint import raw_entries
from statectl.statefmt.flink.stream_write import row_schema
from statectl.statefmt.flink.types import Buf

KEY_VALUE_SHAPES = ("rocksdb-canonical", "hashmap-canonical", "rocksdb-canonical-ttl", "hashmap-canonical-ttl",
                    "rocksdb-native")


def _key_value_savepoints() -> list:
    forst = flink_job.make_sql_snapshot("2.3.0", backend="forst", format="native")
    return [p for shape in KEY_VALUE_SHAPES for p in sql_savepoints(shape)] + \
        [pytest.param(forst.path, id="2.3.0-forst-native")]


@pytest.mark.parametrize("path", sql_savepoints("rocksdb-canonical"))
def test_sql_operators_written_again_are_flinks_streams(path):
    streams = 0
    for op, split in sql_keyed_splits(path):
        rewrite = SplitRewrite(op, split)
        written, offsets = rewrite.stream(rewrite.entries(*rewrite.tables()))
        assert written == rewrite.stored(), (op.name, split.subtask)
        assert offsets == tuple(split.handle.offsets)
        streams += 1
    assert streams >= 4


def _regrouped(rewrite: SplitRewrite, max_parallelism: int) -> pa.Table:
    schema = row_schema(rewrite.states)
    return pa.concat_tables([regrouped_entries(header, raw, schema, max_parallelism)
                             for header, raw in raw_entries(rewrite.split)])


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(c, "ascending") for c in t.column_names])


@pytest.mark.parametrize("path", _key_value_savepoints())
def test_sql_entries_moved_by_their_bytes_are_flinks_streams_and_the_encoders_rows(path):
    streams = 0
    for op, split in sql_keyed_splits(path):
        rewrite = SplitRewrite(op, split)
        if "rocksdb-canonical" in str(path):  # a heap backend writes its entries in its tables' order
            written, offsets = rewrite.stream(_regrouped(rewrite, op.max_parallelism))
            assert written == rewrite.stored(), (op.name, split.subtask)
            assert offsets == tuple(split.handle.offsets)
        for max_parallelism in (256, 96):
            rewrite.op = dataclasses.replace(op, max_parallelism=max_parallelism)  # the encoders' key groups
            encoded = rewrite.entries(*rewrite.tables())
            assert _sorted(_regrouped(rewrite, max_parallelism)).equals(_sorted(encoded)), (op.name, max_parallelism)
        streams += 1
    assert streams >= 4


def test_a_key_row_running_past_its_key_is_one_line():
    op, split = next(sql_keyed_splits(sql_savepoints("rocksdb-canonical")[0].values[0]))
    header, raw = next(raw_entries(split))
    state_id, entries = next((i, r) for i, r in raw.items() if header.states[i].kind != "timers")
    data = bytearray(entries.buf.data)
    at = int(entries.key_starts[0])
    data[at:at + 4] = (1 << 20).to_bytes(4, "big")  # the key row's length
    broken = dataclasses.replace(entries, buf=Buf(bytes(data), "stream", base=entries.buf.base))
    schema = row_schema(SplitRewrite(op, split).states)
    with pytest.raises(FlinkFormatError, match=r"^stream: the key row at offset \d+ runs past its key$"):
        regrouped_entries(header, {state_id: broken}, schema, 256)
