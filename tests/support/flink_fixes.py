"""The fix of the Flink dev fixture `long-hashmap-canonical` that the Flink write tests make and
check (tests/writers/test_flink_base.py and the tests built on it): its spec, the description
Flink restores it against, and what a renamed copy is expected to hold."""

from __future__ import annotations

import copy

PROC = "lk-proc"


VALUES = ("count", "sum", "avg", "ratio", "flag", "last_type")


WRITTEN = (*VALUES, "events", "attrs")  # lk-proc's states the fix writes (values and by_bucket dropped)


def fix_spec(identity: str, table: str, parallelism: int) -> str:
    """The fix as a spec: the operator named by *identity* (`uid: X` or `operator_id: ID`) written
    again from `{sql: ...}` inputs over its *table*, count + 1 for even keys."""
    return f"""
operators:
  - {identity}
    parallelism: {parallelism}
    keyed:
      key: key
      input: {{sql: "SELECT key, IF(key % 2 = 0, count + 1, count) AS count, {', '.join(VALUES[1:])}
                     FROM `{table}`"}}
      states:
{chr(10).join(f"        - {{name: {s}, kind: value, column: {s}}}" for s in VALUES)}
        - name: events
          kind: list
          column: e
          order_by: pos
          input: {{sql: "SELECT key, pos, e FROM `{table}` LATERAL VIEW posexplode(events) t AS pos, e"}}
        - name: attrs
          kind: map
          key_column: k
          value_column: v
          input: {{sql: "SELECT key, k, v FROM `{table}` LATERAL VIEW explode(attrs) t AS k, v"}}
"""


def fixed_description(full: dict, uid: str = PROC) -> dict:
    """The job's description with *uid* (lk-proc) declaring only the states the fix writes (no timers)."""
    out = copy.deepcopy(full)
    for op in out["operators"]:
        if op["uid"] == uid:
            op["keyed_state"] = [s for s in op["keyed_state"] if s["name"] in WRITTEN]
            del op["timers"]
    return out


def _union_sorted(op: dict) -> dict:
    """*op*'s dump with each subtask's UNION list sorted: Flink concatenates the subtasks' lists
    in an order of its own (as flink_job.declared_mismatches compares them)."""
    out = copy.deepcopy(op)
    for state in out.get("operator_state", {}).values():
        if state["distribution"] == "UNION":
            state["subtasks"] = {s: sorted(v) for s, v in state["subtasks"].items()}
    return out


def renamed_expected(expected: dict, prefix: str) -> dict:
    """expected.json of the snapshot as the job run with *prefix* names it."""
    out = copy.deepcopy(expected)
    out["operators"] = {prefix + uid: {**op, "uid": prefix + uid} for uid, op in expected["operators"].items()}
    out["scenario"]["knobs"]["uid-prefix"] = prefix
    return out
