"""A savepoint bootstrapped by `writers` restores in both backends: every key's state in the
subtask owning its key group, nothing missing, nothing extra."""

from __future__ import annotations

from collections import defaultdict

import pytest

from statefmt.backends import HeapBackend, RocksDBBackend
from restore_checks import restored
from statefmt.savepoint import load
from writers import KeyedData, ListState, MapState, OperatorData, ReducingState, SavepointWriter, \
    Timers, ValueState

N = 300


def rows():
    return [(f"u{i % 37}", i, "abc"[i % 3], 1_000 + i) for i in range(N)]


@pytest.fixture(scope="module")
def boot(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("boot") / "sp"
    df = spark.createDataFrame(rows(), "user string, v bigint, kind string, ts bigint")
    keyed = KeyedData(key=["user"], data=df, states=[
        ValueState("total", column="v", combine="sum"),
        ListState("kinds", column="kind", order_by="v"),
        MapState("last", key_column="kind", value_column="v", combine="max"),
        ReducingState("top", column="v", function="max"),
    ], timers=[Timers("event", column="ts")])
    SavepointWriter.new(max_parallelism=64).with_operator(
        OperatorData("boot", parallelism=3, keyed=keyed)).write(str(out), spark)
    return load(out)


def expected():
    state = defaultdict(lambda: {"total": 0, "kinds": [], "last": {}, "top": None})
    for user, v, kind, _ in rows():
        s = state[user]
        s["total"] += v
        s["kinds"].append(kind)  # rows come in v order
        s["last"][kind] = max(s["last"].get(kind, v), v)
        s["top"] = v if s["top"] is None else max(s["top"], v)
    for s in state.values():
        s["last"] = sorted(s["last"].items())
    return dict(state)


@pytest.mark.parametrize("backend", [HeapBackend, RocksDBBackend], ids=lambda c: c.__name__)
@pytest.mark.parametrize("parallelism", [1, 2, 3, 7])
def test_bootstrapped_savepoint_restores_by_key_group(boot, backend, parallelism):
    got, timers = restored(boot, backend, parallelism)
    assert got == expected()
    assert timers == {(u, ts) for u, _, _, ts in rows()}
