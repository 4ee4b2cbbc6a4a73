"""The operator "boot": its input rows, its keyed states, the state it must restore to,
and restoring it subtask by subtask in a state backend."""

from __future__ import annotations

from collections import defaultdict

from statectl.writers import ListState, MapState, ReducingState, Timers, ValueState

N = 300


def rows():
    # users u0..u36: strings of two lengths in one key group sort differently in Spark
    # ("u1" < "u10" < "u2") and in the native encoding (length first)
    return [(f"u{i % 37}", i, "abc"[i % 3], 1_000 + i) for i in range(N)]


ROWS_DDL = "user string, v bigint, kind string, ts bigint"


def boot_states() -> list:
    """The keyed states of "boot" over :func:`rows`."""
    return [
        ValueState("total", column="v", combine="sum"),
        ListState("kinds", column="kind", order_by="v"),
        MapState("last", key_column="kind", value_column="v", combine="max"),
        ReducingState("top", column="v", function="max"),
    ]


BOOT_TIMERS = [Timers("event", column="ts")]


def expected() -> dict:
    """Every user's restored state: total, kinds in v order, last v per kind, top v."""
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


def restored(sp, backend, parallelism) -> tuple[dict, set]:
    """Every key's state restored by each subtask of *parallelism*, and the timers."""
    keyed = sp.operator("boot").keyed
    t = {s.name: s for s in keyed.states}
    got, timers = {}, set()
    for i in range(parallelism):
        with backend.restore(sp, "boot", subtask=i, parallelism=parallelism) as b:
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
    return got, timers
