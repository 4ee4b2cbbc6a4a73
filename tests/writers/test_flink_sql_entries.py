"""A SQL operator's state written again by the Flink writer's task side, unchanged, is the
stream Flink wrote, byte for byte: each keyed SQL operator of the suite's RocksDB canonical SQL
savepoints (Flink 1.20 and 2.3) and of the probe is read into its tables by statectl, its
rows given to the writer's encoders as the write's inputs (`EntryEncoder`: key rows placed
by their bytes' hash, values, map entries, timers), sorted by key group and key as the
write's shuffle sorts them, and assembled by the stream builder under the header copied from
the base (its serializer snapshots as Flink wrote them) (`tests/flink_sql_entries.py`).
No Spark: the tasks' code itself.
"""

from __future__ import annotations

import pytest

from flink_sql_entries import SplitRewrite, sql_keyed_splits, sql_savepoints


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
