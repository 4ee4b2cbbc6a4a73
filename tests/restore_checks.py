"""Restoring a bootstrapped operator "boot" subtask by subtask in a state backend."""

from __future__ import annotations


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
