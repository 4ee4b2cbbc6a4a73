"""Reading a written savepoint back with statefmt alone (no Spark), for the writer tests; the
SHA-256 of every file below a folder (a base a write must never change)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from statectl.statefmt.canonical import keyed_schema, operator_state_schema, read_file, timers_schema
from statectl.statefmt.keygroups import key_group_for_key, key_group_range, subtask_for_key_group
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location


def _read(sp, files, schema) -> list[dict]:
    rows = []
    for f in files:
        rows += read_file(file_location(sp, f.ref), f, schema).to_pylist()
    return rows


def keyed_rows(location, uid: str) -> list[dict]:
    """The operator's keyed table, in file order (key-group order), checked for layout."""
    return _laid_out_rows(location, uid, timers=False)


def timer_rows(location, uid: str) -> list[dict]:
    """The operator's timers, as :func:`keyed_rows`."""
    return _laid_out_rows(location, uid, timers=True)


def _laid_out_rows(location, uid: str, timers: bool) -> list[dict]:
    sp = load(location)
    op = sp.operator(uid)
    files, schema = (op.keyed.timers, timers_schema(op.keyed)) if timers else (op.keyed.files, keyed_schema(op.keyed))
    rows = []
    for f in files:
        part = _read(sp, [f], schema)
        check_layout(op, f, part)
        rows += part
    return rows


def check_layout(op, f, rows: list[dict]) -> None:
    """A keyed file: sorted by key group, inside its range, inside one subtask's range,
    and every row's key group equals the pure-Python key group of its key."""
    first, last = f.key_groups
    subtask = subtask_for_key_group(first, op.max_parallelism, op.parallelism)
    lo, hi = key_group_range(op.max_parallelism, op.parallelism, subtask)
    assert lo <= first <= last <= hi
    groups = [r["_key_group"] for r in rows]
    assert groups == sorted(groups)
    for r in rows:
        key = [r[k.name] for k in op.keyed.key]
        assert r["_key_group"] == key_group_for_key(key, op.keyed.key_types, op.max_parallelism)
        assert first <= r["_key_group"] <= last


def state_rows(location, uid: str, name: str) -> list[dict]:
    sp = load(location)
    state = sp.operator(uid).operator_state(name)
    return _read(sp, state.files, operator_state_schema(state))


def tree_digest(path) -> dict[str, str]:
    """Every file below *path* with the SHA-256 of its bytes."""
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def files_below(path) -> list[str]:
    """The files below *path*, by name only: a folder being written can rename a file between
    its listing and an open (a test polling a running write saw that)."""
    return sorted(os.path.relpath(os.path.join(root, name), path)
                  for root, _, files in os.walk(path) for name in files)


def digest(folder: Path) -> dict[str, str]:
    """Every file below *folder* with its SHA-256: the base must never change."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
