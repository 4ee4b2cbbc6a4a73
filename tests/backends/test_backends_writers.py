"""A savepoint bootstrapped by `writers` restores in both backends: every key's state in the
subtask owning its key group, nothing missing, nothing extra."""

from __future__ import annotations

import pytest

from statectl.backends import HeapBackend, RocksDBBackend
from support.restore_checks import BOOT_TIMERS, ROWS_DDL, boot_states, expected, restored, rows
from statectl.statefmt.formats import load
from statectl.writers import KeyedData, OperatorData, SavepointWriter


@pytest.fixture(scope="module")
def boot(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("boot") / "sp"
    df = spark.createDataFrame(rows(), ROWS_DDL)
    keyed = KeyedData(key=["user"], data=df, states=boot_states(), timers=BOOT_TIMERS)
    SavepointWriter.new(max_parallelism=64).with_operator(
        OperatorData("boot", parallelism=3, keyed=keyed)).write(str(out), spark)
    return load(out)


@pytest.mark.slow
@pytest.mark.parametrize("backend", [HeapBackend, RocksDBBackend], ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 3, 7])
def test_bootstrapped_savepoint_restores_by_key_group(boot, backend, parallelism):
    got, timers = restored(boot, backend, parallelism)
    assert got == expected()
    assert timers == {(u, ts) for u, _, _, ts in rows()}
