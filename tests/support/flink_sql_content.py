"""What a Flink savepoint's operators hold, whatever their layout: every keyed table (states and
TTL timestamps, RowKinds), timers table and operator state table, read without Spark, as sorted
rows with the key group left out (a rescale moves keys to new groups) and each map's entries in
key order (a heap backend writes a map in its hash order, RocksDB in its keys' bytes order). Two
savepoints of one job before and after a rescale hold the same content, row for row; in a
canonical savepoint, the same entries byte for byte (raw_entries)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from statectl.statefmt.flink.describe import key_group_blocks
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, operator_state_table, timers_table
from statectl.statefmt.flink.streamio import header_length, read_range, split_base
from statectl.statefmt.flink.streams import prefix_bytes, scan_canonical
from statectl.statefmt.flink.types import Buf
from statectl.statefmt.model import TTL_SUFFIX

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


def ttl_timestamps(path) -> dict[str, dict[str, list]]:
    """Every TTL state's last-access timestamps (its ``<state>_ttl_ts`` column: a value's, or a map's
    per entry), by operator id and state, each a sorted list of (key row, timestamps)."""
    out = {}
    for op in open_flink_savepoint(str(path)).operators:
        if op.keyed_schema is None or not any(n.endswith(TTL_SUFFIX) for n in op.keyed_schema.names):
            continue
        table = keyed_table(op)
        keys = [n for n in table.column_names if n.startswith("f") and n[1:].isdigit()]

        def stamps(column: str) -> list[str]:
            t = table.schema.field(column).type
            return sorted(json.dumps([[r[k] for k in keys], _canonical(r[column], t)], default=str)
                          for r in table.to_pylist() if r[column] is not None)
        out[op.operator_id] = {n.removesuffix(TTL_SUFFIX): stamps(n) for n in table.column_names if n.endswith(TTL_SUFFIX)}
    return out


def raw_entries(path) -> dict[str, dict[str, list[tuple[bytes, bytes]]]]:
    """Every keyed operator's entries in a canonical savepoint as Flink's bytes, by operator id and
    state: the key (key row, namespace, a map's user key; a timer's timestamp, key row and
    namespace) without its key-group prefix, and the value (a TTL value: its last-access timestamp,
    then the user value), sorted. A rewrite at another max parallelism that keeps every byte of
    every entry keeps these."""
    out = {}
    for op in open_flink_savepoint(str(path)).operators:
        if op.keyed_header is None:
            continue
        states: dict[str, list] = {}
        for split in op.keyed_splits:
            for name, (keys, values) in _split_entries(split).items():
                states.setdefault(name, []).extend(zip(keys, values))
        out[op.operator_id] = {name: sorted(entries) for name, entries in states.items()}
    return out


def _split_entries(split) -> dict[str, tuple[list[bytes], list[bytes]]]:
    """Per state name, the keys and values of one canonical keyed split (see raw_entries)."""
    base, handle = split_base(split), split.handle
    data = read_range(base, handle.stream, 0, handle.stream.size)
    header = read_keyed_header(data[:header_length(handle)], "header")
    assert not header.compressed
    blocks = key_group_blocks(handle, handle.stream.size, split.key_groups)
    raw = scan_canonical(Buf(data, "stream"), header, blocks, prefix_bytes(split.max_parallelism))
    return {header.states[i].name: (r.buf.slices(r.key_starts, r.key_ends).to_pylist(),
                                    r.buf.slices(r.value_starts, r.value_ends).to_pylist()) for i, r in raw.items()}


def restored_changes(dump: dict) -> dict[str, list]:
    """Each statement's changelog after a restore (flink_job.restore_sqls), in one order whatever
    the order its rows came in."""
    from support import flink_job

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
