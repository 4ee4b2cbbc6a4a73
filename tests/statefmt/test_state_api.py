"""One keyed state API: a bootstrap function's context and the backends give the same handles,
with the same semantics, over their own storage."""

from __future__ import annotations

import numpy as np
import pytest

from statectl.backends import HeapBackend, RocksDBBackend
from statectl.statefmt import state_api
from statectl.statefmt.errors import UsageError
from statectl.statefmt.model import KeyedStateDescriptor
from statectl.writers.own.function import KeyContext

ACC = {"struct": [{"name": "sum", "type": "int64"}, {"name": "count", "type": "int64"}]}
STATES = [
    KeyedStateDescriptor("count", "value", "int64"),
    KeyedStateDescriptor("events", "list", "string"),
    KeyedStateDescriptor("attrs", "map", "int32", "string"),
    KeyedStateDescriptor("total", "reducing", "int64", function="sum"),
    KeyedStateDescriptor("mean", "aggregating", ACC, function="avg"),
]


def script(value, lst, mp, reducing, aggregating) -> list:
    """The same calls on either API; what each call shows."""
    seen = [value.value(), value.value(7), lst.get(), mp.get("x", -1), reducing.get(), aggregating.get()]
    value.update(3)
    lst.add("a")
    lst.add_all(["b", "c"])
    lst.add_all([])
    mp.put("x", 1)
    mp.put_all({"y": 2, "z": 3})
    mp.put_all([("w", 4)])
    mp.remove("z")
    for n in (5, 1, 6):
        reducing.add(n)
        aggregating.add(n)
    seen += [value.value(), lst.get(), list(lst), sorted(mp.items()), sorted(mp.keys()),
             sorted(mp.values()), mp.contains("x"), "z" in mp, mp.is_empty(), mp.get("x"),
             reducing.get(), aggregating.get(), aggregating.accumulator()]
    value.update(None)
    lst.update([])
    for k in mp.keys():
        mp.remove(k)
    reducing.update(100)
    seen += [value.value(), lst.get(), mp.is_empty(), mp.items(), reducing.get()]
    aggregating.clear()
    reducing.clear()
    seen += [aggregating.get(), reducing.get()]
    return seen


EXPECTED = [None, 7, [], -1, None, None,
            3, ["a", "b", "c"], ["a", "b", "c"], [("w", 4), ("x", 1), ("y", 2)], ["w", "x", "y"],
            [1, 2, 4], True, False, False, 1, 12, 4.0, {"sum": 12, "count": 3},
            None, [], True, [], 100,
            None, None]


def test_a_bootstrap_function_sees_the_state_api():
    ctx = KeyContext(STATES)
    ctx._reset(("ann",))
    handles = [ctx.value("count"), ctx.list("events"), ctx.map("attrs"), ctx.reducing("total"),
               ctx.aggregating("mean")]
    assert [type(h) for h in handles] == [state_api.ValueState, state_api.ListState,
                                          state_api.MapState, state_api.ReducingState,
                                          state_api.AggregatingState]
    assert script(*handles) == EXPECTED


@pytest.mark.parametrize("backend", [HeapBackend, RocksDBBackend])
def test_a_job_on_the_backends_sees_the_same_state_api(backend):
    with backend.create("op", subtask=0, parallelism=1, max_parallelism=16,
                        key=[("user", "string")]) as b:
        handles = [b.value_state("count", "int64"), b.list_state("events", "string"),
                   b.map_state("attrs", "string", "int32"),
                   b.reducing_state("total", "int64", lambda a, x: a + x),
                   b.aggregating_state("mean", ACC, state_api.Average())]
        b.set_current_key("ann")
        assert script(*handles) == EXPECTED


def test_named_functions_count_and_a_state_without_function():
    ctx = KeyContext([KeyedStateDescriptor("n", "reducing", "int64", function="count"),
                      KeyedStateDescriptor("acc", "aggregating", ACC)])
    ctx._reset(("k",))
    n, acc = ctx.reducing("n"), ctx.aggregating("acc")
    for v in (10, 20, 30):
        n.add(v)
    assert n.get() == 3
    acc.update({"sum": 4, "count": 2})
    assert acc.get() == {"sum": 4, "count": 2}  # no function: the accumulator itself
    with pytest.raises(UsageError) as e:
        acc.add(1)
    assert str(e.value) == ("aggregating state 'acc': add() needs an aggregate function (avg); "
                            "set the accumulator with update()")
    assert state_api.Average().get_result({"sum": 0, "count": 0}) is None


def test_the_timer_service_of_a_bootstrap_function_registers_and_deletes():
    ctx = KeyContext([])
    ctx._reset(("k",))
    ctx.timer_service.register_event_time_timer(np.int64(5))
    ctx.timer_service.register_event_time_timer(5)
    ctx.timer_service.register_processing_time_timer(9)
    ctx.namespace = "w"
    ctx.timer_service.register_event_time_timer(7)
    ctx.timer_service.register_event_time_timer(8)
    ctx.timer_service.delete_event_time_timer(8)
    ctx.timer_service.delete_processing_time_timer(9)  # another namespace: nothing deleted
    assert sorted(ctx._timers, key=str) == sorted(
        [(None, 5, "event"), (None, 9, "processing"), ("w", 7, "event")], key=str)
    assert all(type(ts) is int for _, ts, _ in ctx._timers)


@pytest.mark.parametrize("bad", [1.5, True, "5"])
def test_a_timer_timestamp_is_an_integer_on_both(bad):
    ctx = KeyContext([])
    with HeapBackend.create("op", subtask=0, parallelism=1, max_parallelism=16,
                            key=[("user", "string")]) as b:
        b.set_current_key("ann")
        for service in (ctx.timer_service, b.timer_service):
            with pytest.raises(UsageError) as e:
                service.register_event_time_timer(bad)
            assert str(e.value) == f"a timer's timestamp is an integer (milliseconds), got {bad!r}"
