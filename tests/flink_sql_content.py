"""What a Flink savepoint's operators hold, whatever their layout: every keyed table (states and
TTL timestamps, RowKinds), timers table and operator state table, read without Spark, as sorted
rows with the key group left out (a rescale moves keys to new groups) and each map's entries in
key order (a heap backend writes a map in its hash order, RocksDB in its keys' bytes order). Two
savepoints of one job before and after a rescale hold the same content, row for row."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, operator_state_table, timers_table

KEY_GROUP = "_key_group"


def _canonical(value, t: pa.DataType):
    """*value* (as to_pylist gives it) with map entries sorted, in nested types too."""
    if value is None:
        return None
    if pa.types.is_map(t):
        entries = [(_canonical(k, t.key_type), _canonical(v, t.item_type)) for k, v in value]
        return sorted(entries, key=lambda e: json.dumps(e, sort_keys=True, default=str))
    if pa.types.is_struct(t):
        return {t.field(i).name: _canonical(value[t.field(i).name], t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_canonical(v, t.value_type) for v in value]
    return value


def _rows(table: pa.Table, as_stored: bool) -> list[str]:
    if as_stored:
        return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())
    table = table.drop_columns([c for c in table.column_names if c == KEY_GROUP])
    fields = list(table.schema)
    return sorted(json.dumps({f.name: _canonical(r[f.name], f.type) for f in fields}, sort_keys=True, default=str)
                  for r in table.to_pylist())


def operator_content(path, operator_id: str, as_stored: bool = False) -> dict[str, list[str]]:
    """One operator's tables as sorted rows: keyed, timers, each operator state; layout-free,
    or *as_stored* (key groups and map entry order kept: for writes that keep the layout)."""
    op = open_flink_savepoint(str(path)).operator(operator_id)
    out = {name: _rows(operator_state_table(op, name), as_stored) for name in op.operator_states}
    if op.keyed_schema is not None:
        out["keyed"] = _rows(keyed_table(op), as_stored)
        if any(m.kind == "timers" for m in op.keyed_header.states):
            out["timers"] = _rows(timers_table(op), as_stored)
    return out


def savepoint_content(path) -> dict[str, dict[str, list[str]]]:
    """Every operator's content, by operator id."""
    return {op.operator_id: operator_content(path, op.operator_id)
            for op in open_flink_savepoint(str(path)).metadata.operators}


def restored_changes(dump: dict) -> dict[str, list]:
    """Each statement's changelog after a restore (flink_job.restore_sqls), in one order whatever
    the order its rows came in."""
    import flink_job

    return {s: flink_job.sorted_rows(st["received_changelog"]) for s, st in dump["statements"].items()}


def net_changes(changes: dict[str, list]) -> dict[str, dict[str, int]]:
    """Each statement's net change to its table (rows added less rows retracted). A statement over
    another's changes (retract_agg over a deduplication) sees them from several subtasks
    interleaved as they come, so its intermediate updates differ from run to run while its table
    ends the same: compare such runs by net change."""
    net = {}
    for statement, rows in changes.items():
        counts = Counter()
        for kind, *row in rows:
            counts[json.dumps(row)] += 1 if kind in ("+I", "+U") else -1
        net[statement] = {row: n for row, n in counts.items() if n}
    return net
