"""A savepoint bootstrapped by `writers` restores in both backends: every key's state in the
subtask owning its key group, nothing missing, nothing extra."""

from __future__ import annotations

from collections import defaultdict

import pytest

from statefmt.backends import HeapBackend, RocksDBBackend
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
    keyed = boot.operator("boot").keyed
    t = {s.name: s for s in keyed.states}
    got, timers = {}, set()
    for i in range(parallelism):
        with backend.restore(boot, "boot", subtask=i, parallelism=parallelism) as b:
            total = b.value_state("total", t["total"].value_type)
            kinds = b.list_state("kinds", t["kinds"].value_type)
            last = b.map_state("last", t["last"].user_key_type, t["last"].value_type)
            top = b.reducing_state("top", t["top"].value_type, max)
            users = {k[0] for name in t for k, _ in b.keys(name)}
            for user in users:
                assert b.first_group <= b.key_group_of(user) <= b.last_group
                assert user not in got
                b.set_current_key(user)
                got[user] = {"total": total.value(), "kinds": kinds.get(),
                             "last": sorted(last.items()), "top": top.get()}
            timers |= {(tm.key[0], tm.timestamp) for tm in b.fire_event_time_timers(2 ** 62)}
    assert got == expected()
    assert timers == {(u, ts) for u, _, _, ts in rows()}
