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

from pathlib import Path

import pytest

import flink_job
from flink_sql_entries import SplitRewrite
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.savepoint import open_flink_savepoint

PROBE = Path(__file__).parents[1] / "fixtures" / "flink-sql-probe"


def _savepoints():
    out = [pytest.param(PROBE / "rocksdb-canonical", id="probe")]
    for version in flink_job.SQL_VERSIONS:
        snap = dict(zip(flink_job.SQL_SHAPES, flink_job.make_sql_snapshots(version)))["rocksdb-canonical"]
        out.append(pytest.param(snap.path, id=version))
    return out


@pytest.mark.parametrize("path", _savepoints())
def test_sql_operators_written_again_are_flinks_streams(path):
    streams = 0
    for op in open_flink_savepoint(path).operators:
        if op.keyed_header is None or not isinstance(op.key_type, RowData):
            continue
        for split in op.keyed_splits:
            rewrite = SplitRewrite(op, split)
            written, offsets = rewrite.stream(rewrite.entries(*rewrite.tables()))
            assert written == rewrite.stored(), (op.name, split.subtask)
            assert offsets == tuple(split.handle.offsets)
            streams += 1
    assert streams >= 4
