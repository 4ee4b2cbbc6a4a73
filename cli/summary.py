"""Plain-data summaries of savepoints, shared by every output format."""

from __future__ import annotations

from statectl.statefmt.model import DataFile, Operator, Savepoint
from statectl.statefmt.locations import file_location
from statectl.statefmt.types import type_str


def _files(files) -> dict:
    files = list(files)
    rows = None if any(f.rows is None for f in files) else sum(f.rows for f in files)  # Flink: unknown
    return {"files": len(files), "bytes": sum(f.size for f in files), "rows": rows}


def _shared(files: list[DataFile]) -> list[DataFile]:
    return [f for f in files if f.ref.is_shared]


def state_rows(op: Operator) -> list[dict]:
    out = []
    if op.keyed is not None:
        for s in op.keyed.states:
            row = {"name": s.name, "kind": s.kind, "scope": "keyed", "type": type_str(s.column_type),
                   "value_type": s.value_type}
            if s.user_key_type is not None:
                row["user_key_type"] = s.user_key_type
            if s.function is not None:
                row["function"] = s.function
            out.append(_flink_fields(row, s))
    for s in op.operator_states:
        row = {"name": s.name, "kind": s.kind, "scope": "operator", "value_type": s.value_type,
               "type": type_str(s.value_type) if s.key_type is None
               else f"{type_str(s.key_type)} -> {type_str(s.value_type)}"}
        if s.key_type is not None:
            row["key_type"] = s.key_type
        row.update(_files(s.files))
        out.append(_flink_fields(row, s))
    return out


def _flink_fields(row: dict, state) -> dict:
    """A Flink state's serializer class, TTL and bytes (statectl's own states have none)."""
    if state.serializer is not None:
        row.update(serializer=state.serializer, ttl=getattr(state, "ttl", False), bytes=state.size)
    if getattr(state, "note", ""):
        row["note"] = state.note
    return row


def operator_summary(op: Operator) -> dict:
    files = list(op.data_files())
    shared = _shared(files)
    out = {
        "uid": op.uid,
        "operator_id": op.operator_id,
        "parallelism": op.parallelism,
        "max_parallelism": op.max_parallelism,
        "format": op.format,
        "name": op.name,
        "states": state_rows(op),
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "shared_files": len(shared),
        "shared_bytes": sum(f.size for f in shared),
    }
    if op.unreadable:
        out["unreadable"] = [{"part": u.part, "reason": u.reason, "damaged": u.damaged, **_files(u.files)}
                             for u in op.unreadable]
    if op.keyed is not None:
        out["keyed"] = {
            "key": [{"name": f.name, "type": f.type} for f in op.keyed.key],
            "namespace_type": op.keyed.namespace_type,
            "table": _files(op.keyed.files),
            "timers": _files(op.keyed.timers),
            **({"layout": op.keyed.layout} if op.keyed.layout is not None else {}),
        }
    return out


def savepoint_summary(sp: Savepoint) -> dict:
    shared = [
        {"operator": op.label, "path": f.ref.path, "savepoint": f.ref.savepoint,
         "location": str(file_location(sp, f.ref)), "bytes": f.size}
        for op, f in sp.data_files() if f.ref.is_shared
    ]
    operators = [operator_summary(op) for op in sp.operators]
    return {
        "location": sp.location,
        "savepoint_id": sp.savepoint_id,
        "created_at": sp.created_at,
        "format_version": sp.format_version,
        "lineage": [{"savepoint_id": e.savepoint_id, "location": e.location} for e in sp.lineage],
        "operators": operators,
        "files": sum(o["files"] for o in operators),
        "bytes": sum(o["bytes"] for o in operators),
        "shared_files": shared,
        "absolute_files": absolute_references(sp),
    }


def absolute_references(sp: Savepoint) -> list[dict]:
    """Files a Flink `_metadata` names by absolute path (a retained checkpoint's shared files)."""
    return [{"operator": op.label, "path": f.ref.path, "bytes": f.size}
            for op, f in sp.data_files() if f.ref.location is not None]


def write_summary(report) -> dict:
    """What a write (bootstrap, modify, rescale) did, from its :class:`writers.WriteReport`."""
    sp = report.savepoint
    return {
        "location": sp.location,
        "savepoint_id": sp.savepoint_id,
        "operators": [vars(o) for o in report.operators],
        "removed": report.removed,
        "lineage": [{"savepoint_id": e.savepoint_id, "location": e.location} for e in sp.lineage],
        "copied_files": report.copied_files,
        "copied_bytes": report.copied_bytes,
        "removed_leftover_files": report.removed_leftovers,
    }


def prune_summary(report) -> dict:
    """What a prune did (:class:`writers.prune.PruneReport`): the write's summary and, per pruned
    operator, what went (docs/PRUNE.md describes each field)."""
    return {**write_summary(report.write),
            "pruned": [{**{k: v for k, v in vars(o).items() if k != "states"},
                        "states": [vars(s) for s in o.states]} for o in report.operators]}


def diff_summary(d) -> dict:
    """What :func:`statectl.readers.diff.diff_savepoints` found, as plain data."""
    return {
        "a": d.a,
        "b": d.b,
        "identical": d.identical,
        "same_content": d.same_content,
        "operators": {
            "added": list(d.operators_added),
            "removed": list(d.operators_removed),
            "renamed": [{"a": a, "b": b, "why": why} for a, b, why in d.operators_renamed],
        },
        "changes": [vars(c) for c in d.changes],
        "tables": [{**vars(t), "samples": dict(t.samples)} for t in d.tables],
    }
