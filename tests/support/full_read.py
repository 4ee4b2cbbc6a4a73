"""A savepoint's full read for the writer tests: every keyed table (every column, `_key_group`
included), every timer table and every operator state, as the local engine reads them, each as
sorted JSON rows (a map as an object: its entries' order is the stream's, not content)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from statectl.readers.local import local_table
from statectl.readers.resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice
from statectl.statefmt.formats import load


def plain(value, t: pa.DataType):
    """*value* of Arrow type *t* as JSON can hold it, a map as an object (its entries' order
    is the stream's, not content)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        return {json.dumps(plain(k, t.key_type), default=str): plain(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [plain(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: plain(value[f.name], f.type) for f in t}
    return value


def rows(table: pa.Table) -> list[str]:
    types = {f.name: f.type for f in table.schema}
    return sorted(json.dumps({k: plain(v, types[k]) for k, v in row.items()}, sort_keys=True, default=str)
                  for row in table.to_pylist())


def full_read(path: Path, rename: dict[str, str] | None = None) -> dict:
    """{(operator, table): sorted rows} of every keyed table (every column and `_key_group`),
    every timer table and every operator state of the savepoint at *path*, as the local engine
    reads them (`test_local_engine`: the rows Spark reads); *rename* maps an operator's label
    (uid, else operator id) here to the label its rows are filed under."""
    sp = load(str(path))
    rename = rename or {}
    out = {}
    for op in sp.operators:
        label = rename.get(op.label, op.label)
        if op.keyed is not None:
            for kind in (KEYED, TIMERS):
                out[(label, kind)] = rows(local_table(sp, TableChoice(op, kind), include_key_group=True))
        for state in op.operator_states:
            out[(label, "operator_state", state.name)] = rows(
                local_table(sp, TableChoice(op, OPERATOR_STATE, (state.name,))))
    return out


