"""Native and canonical savepoints of the same state read into identical DataFrames."""

from __future__ import annotations

import pytest

from support.builders import build_full_savepoint
from statectl.readers import open_savepoint
from statectl.backends import RocksDBBackend, commit_snapshots

MAX_P = 16


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    base = tmp_path_factory.mktemp("pair")
    source = build_full_savepoint(base / "source", parallelism=3, max_parallelism=MAX_P)
    backends = [RocksDBBackend.restore(source, "proc", subtask=i, parallelism=2) for i in range(2)]
    try:  # the same state, snapshotted in both formats
        canonical = commit_snapshots(base / "canonical", [b.snapshot(base / "canonical") for b in backends])
        nat = commit_snapshots(base / "native", [b.snapshot(base / "native", format="rocksdb")
                                                 for b in backends])
    finally:
        for b in backends:
            b.close()
    return canonical, nat


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_native_and_canonical_read_the_same(spark, pair):
    canonical, nat = pair
    c, n = open_savepoint(spark, canonical.location), open_savepoint(spark, nat.location)
    kc = c.keyed("proc", include_key_group=True)
    kn = n.keyed("proc", include_key_group=True)
    assert kn.schema == kc.schema
    assert _rows(kn) == _rows(kc) and kn.count() == 40
    assert _rows(n.timers("proc")) == _rows(c.timers("proc"))
    assert _rows(n.keyed("proc", ["events"], key_groups=(3, 9))) == \
        _rows(c.keyed("proc", ["events"], key_groups=(3, 9)))
    assert n.keyed("proc").rdd.getNumPartitions() == 2  # one per subtask database
