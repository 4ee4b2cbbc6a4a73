"""Checking table rows against a Flink fixture's expected.json.

Rows are dicts, from Arrow (``to_pylist``: maps as lists of pairs) or from JSON
lines (maps as objects with string keys); :func:`norm` brings both to
expected.json's conventions. Each ``check_*`` asserts one table exactly.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flink-dev"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())
TABLE_COLUMNS = ("_key_group", "namespace", "timestamp", "domain", "service")


def expected_of(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text())


def label(key) -> str:
    """expected.json names keys by label: a String itself, a number in decimal, a Tuple '(f0,f1)'."""
    if isinstance(key, (list, tuple)):
        return "(" + ",".join(label(k) for k in key) + ")"
    return key if isinstance(key, str) else str(key)


def norm(value):
    """Tuples (structs f0..fn) as lists, maps as dicts with string keys, the rest as is."""
    if isinstance(value, dict):
        if value and all(k == f"f{i}" for i, k in enumerate(value)):
            return [norm(v) for v in value.values()]
        return {label(k): norm(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {label(k): norm(v) for k, v in value}
        return [norm(v) for v in value]
    return value


def key_names_of(columns, state_columns=()) -> list[str]:
    """The key columns of a keyed or timers table: ``key`` or a tuple's fields."""
    if "key" in columns:
        return ["key"]
    return [c for c in columns if c not in TABLE_COLUMNS and c not in state_columns]


def key_of(row: dict, key_names: list[str]):
    if key_names == ["key"]:
        return row["key"]
    return [row[n] for n in key_names]


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            (a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def window(ns) -> list:
    return [ns["start"], ns["end"]]


def check_keyed(expected: dict, uid: str, rows: list[dict], key_names: list[str], columns,
                serializers: dict | None = None) -> int:
    """The keyed table of *uid* holds exactly its expected state; returns the values compared.

    Key groups are checked when the rows carry ``_key_group``; TTL timestamps
    (``<state>_ttl_ts``) against their bounds.
    """
    exp = expected["operators"][uid]
    compared = 0
    for row in rows:
        if "_key_group" in row:
            assert row["_key_group"] == expected["keys"][label(key_of(row, key_names))]["key_group"]
    for name, state in exp["keyed_state"].items():
        if serializers is not None and "state_serializer" in state:
            assert serializers[name] == state["state_serializer"], (uid, name)
        if isinstance(state["values"], list):  # window contents: one entry per (key, window)
            got = sorted(([label(key_of(r, key_names)), window(r["namespace"]), norm(r[name])]
                          for r in rows if r[name] is not None), key=json.dumps)
            want = sorted(([e["key"], e["window"], e["value"]] for e in state["values"]), key=json.dumps)
            assert same(got, want), (uid, name)
            assert "namespace" in columns
            compared += len(want)
            continue
        assert "namespace" not in columns
        got = {label(key_of(r, key_names)): norm(r[name]) for r in rows if r[name] is not None}
        want = state["values"]
        if state["kind"] == "AGGREGATING":
            want = {k: v["accumulator"] for k, v in want.items()}
        assert same(got, want), (uid, name)
        compared += len(want)
        if "timestamps" in state:
            compared += _check_ttl(state["timestamps"]["bounds"], rows, name, key_names)
    return compared


def _check_ttl(bounds: dict, rows: list[dict], name: str, key_names: list[str]) -> int:
    ts = {label(key_of(r, key_names)): norm(r[name + "_ttl_ts"]) for r in rows if r[name] is not None}
    assert ts.keys() == bounds.keys()
    checked = 0
    for k, b in bounds.items():
        if isinstance(b, dict):
            assert ts[k].keys() == b.keys()
            for mk, (lo, hi) in b.items():
                assert lo <= ts[k][mk] <= hi
                checked += 1
        else:
            assert b[0] <= ts[k] <= b[1]
            checked += 1
    assert checked > 0
    return checked


def check_timers(expected: dict, uid: str, rows: list[dict], key_names: list[str]) -> int:
    """The timers table of *uid* holds exactly its expected timers (every domain and service)."""
    exp = expected["operators"][uid]
    compared = 0
    services = set()
    for domain_name, t in exp["timers"].items():
        domain = "event" if domain_name == "event_time" else "processing"
        service = t["state_name"].split("_", 2)[-1].split("_", 1)[-1]
        services.add((domain, service))
        mine = [r for r in rows if r["domain"] == domain and r["service"] == service]
        for r in mine:
            if "_key_group" in r:
                assert r["_key_group"] == expected["keys"][label(key_of(r, key_names))]["key_group"]
        if isinstance(t["values"], list):
            got = sorted(([label(key_of(r, key_names)), r["timestamp"], window(r["namespace"])]
                          for r in mine), key=json.dumps)
            want = sorted(([e["key"], e["timestamp"], e["window"]] for e in t["values"]), key=json.dumps)
        else:
            got = {}
            for r in mine:
                got.setdefault(label(key_of(r, key_names)), []).append(r["timestamp"])
            got = {k: sorted(v) for k, v in got.items()}
            want = {k: sorted(v) for k, v in t["values"].items() if v}
        assert got == want, (uid, domain_name)
        compared += len(mine)
    assert {(r["domain"], r["service"]) for r in rows} <= services
    return compared


def check_list_state(state: dict, rows: list[dict], by_subtask: bool) -> None:
    """An operator list or union state: every subtask's entries (*by_subtask*: rows carry
    ``subtask``), or their union once (the readers' table: ``value`` only)."""
    if by_subtask:
        got = {}
        for r in rows:
            got.setdefault(str(r["subtask"]), []).append(r["value"])
        assert got == state["subtasks"]
    else:
        want = [v for values in state["subtasks"].values() for v in values]
        assert sorted(r["value"] for r in rows) == sorted(want)


def check_broadcast(state: dict, rows: list[dict]) -> None:
    """Broadcast state: one copy of the map, the same on every subtask."""
    one = state["subtasks"]["0"]
    assert all(s == one for s in state["subtasks"].values())
    assert len(rows) == len(one)
    assert {r["key"]: r["value"] for r in rows} == one


# --- every table of a savepoint, as the views `statectl sql` registers ----------------------

def views_of(expected: dict, labels: dict[str, str] | None = None) -> list[tuple[str, str, str, str]]:
    """(view, uid, kind, state) of every table of the snapshot's operators. An operator's view is
    named by its label: its uid, or, where ``_metadata`` has no uids (version 4, Flink 1.x), its
    operator id (*labels*: uid -> label)."""
    out = []
    for uid, exp in expected["operators"].items():
        name = (labels or {}).get(uid, uid)
        if "keyed_state" in exp:
            out += [(name, uid, "keyed", ""), (f"{name}.timers", uid, "timers", "")]
        for state in list(exp.get("operator_state", {})) + list(exp.get("broadcast_state", {})):
            out.append((f"{name}.{state}", uid, "operator", state))
    return out


def union_query(views: list[tuple[str, str, str, str]]) -> str:
    """One SQL query giving every row of every view as (view, row as JSON, nulls kept)."""
    return " UNION ALL ".join(
        f"SELECT '{view}' AS view, to_json(struct(*), map('ignoreNullFields', 'false')) AS row "
        f"FROM `{view}`" for view, *_ in views)


def check_table(expected: dict, uid: str, kind: str, state: str, rows: list[dict]) -> None:
    """One table (rows as JSON objects: one view of `statectl sql` or `read`) is exactly its
    part of expected.json."""
    exp = expected["operators"][uid]
    if kind == "keyed":
        columns = set().union(*(r.keys() for r in rows)) if rows else set()
        states = {c for c in columns if c in exp["keyed_state"] or c.endswith("_ttl_ts")}
        names = key_names_of(sorted(columns), states)
        assert check_keyed(expected, uid, rows, names, columns) > 0
    elif kind == "timers":
        if "timers" in exp:
            check_timers(expected, uid, rows, key_names_of(rows[0].keys() if rows else ["key"]))
        else:
            assert rows == []
    elif state in exp.get("broadcast_state", {}):
        check_broadcast(exp["broadcast_state"][state], rows)
    else:
        check_list_state(exp["operator_state"][state], rows, by_subtask=False)


def check_operators(expected: dict, operators, named: bool) -> None:
    """The savepoint's operators (statectl's model) are expected.json's, by operator id, with
    their parallelism, max parallelism and state names; *named*: ``_metadata`` holds uids and
    names (version 5 on), else both are None."""
    ops = {op.operator_id: op for op in operators}
    assert set(ops) == {exp["operator_id"] for exp in expected["operators"].values()}
    for uid, exp in expected["operators"].items():
        op = ops[exp["operator_id"]]
        assert (op.uid, op.name) == ((uid, exp["name"]) if named else (None, None)), uid
        assert (op.parallelism, op.max_parallelism) == (exp["parallelism"], exp["max_parallelism"]), uid
        keyed = {s.name for s in op.keyed.states} if op.keyed is not None else set()
        assert keyed == set(exp.get("keyed_state", {})), uid
        assert {s.name for s in op.operator_states} == \
            set(exp.get("operator_state", {})) | set(exp.get("broadcast_state", {})), uid


def _utf(buf, pos):
    n = struct.unpack_from(">H", buf, pos)[0]
    return buf[pos + 2: pos + 2 + n].decode("utf-8"), pos + 2 + n


def _relative_file(buf, pos):
    assert buf[pos] == 6, "these fixtures hold only relative file handles"
    name, pos = _utf(buf, pos + 1)
    return name, pos + 8  # the file name, then its size


def _native_subtasks(fixture):
    """[(first key group, number of key groups, meta file, [(local name, path)])] for every
    IncrementalRemoteKeyedStateHandle (type 11, checkpoint 1, a 36-character backend UUID)."""
    savepoint = FIXTURES / fixture / "savepoint"
    buf = (savepoint / "_metadata").read_bytes()
    out = []
    for m in re.finditer(re.escape(b"\x0b" + (1).to_bytes(8, "big") + b"\x00\x24"), buf):
        _, pos = _utf(buf, m.start() + 9)
        first, count = struct.unpack_from(">ii", buf, pos)
        meta, pos = _relative_file(buf, pos + 16)  # + the checkpointed size
        files = []
        for _ in range(2):  # shared, then private files
            (n,), pos = struct.unpack_from(">i", buf, pos), pos + 4
            for _ in range(n):
                local, pos = _utf(buf, pos)
                name, pos = _relative_file(buf, pos)
                files.append((local, savepoint / name))
        out.append((first, count, meta, files))
    return out


def _operator_of(fixture, meta_file):
    """The operator of a meta file, from the fixtures README's file table."""
    readme = (FIXTURES / "README.md").read_text()
    row = re.search(rf"^\| `{re.escape(meta_file)}` \| \d+ \| ([^ |]+) \|", readme, re.M)
    return row.group(1)


def native_snapshots(fixture):
    """{(operator uid, first key group): [(local name, path)]}"""
    return {(_operator_of(fixture, meta), first): files
            for first, _, meta, files in _native_subtasks(fixture)}


def readers_rows(spark, path: Path, views, labels) -> list:
    """Every view's rows as (view, JSON) through the readers API, in one Spark job."""
    from pyspark.sql import functions as F

    from statectl.readers import open_savepoint

    reader = open_savepoint(spark, str(path))
    frames = []
    for view, uid, kind, state in views:
        op = labels[uid]
        df = (reader.keyed(op, include_key_group=True) if kind == "keyed" else
              reader.timers(op, include_key_group=True) if kind == "timers" else
              reader.operator_state(op, state))
        frames.append(df.select(F.lit(view).alias("view"),
                                F.to_json(F.struct("*"), {"ignoreNullFields": "false"}).alias("row")))
    union = frames[0]
    for df in frames[1:]:
        union = union.unionAll(df)
    return [(r["view"], r["row"]) for r in union.collect()]


def cli_rows(path: Path, views) -> list:
    """Every view's rows as (view, JSON) through `statectl sql`, in one process."""
    from support.cli_runner import statectl

    result = statectl("sql", str(path), union_query(views), "-f", "jsonl")
    assert result.returncode == 0, result.stderr
    return [(line["view"], line["row"]) for line in map(json.loads, result.stdout.splitlines()) if line]
