"""`statectl read` rows read by the local engine (no Spark), as a pyarrow Table: the same
formats and the same text forms as a Spark DataFrame's (cli/frames.py)."""

from __future__ import annotations

import itertools
import json
import os

from rich import box
from rich.table import Table

from .output import make_console
from .results import (TABLE_ROWS, check_frame_output, csv_lines, directory_renamed_in, row_count_line,
                      write_lines)

def write_table(table, fmt: str, output: str | None = None, limit: int | None = None,
                overwrite: bool = False) -> None:
    """:func:`write_frame` for a pyarrow Table, in the same text forms: nested values as JSON,
    binary as base64, timestamps as ISO 8601."""
    check_frame_output(fmt, output, overwrite=overwrite)
    if limit is not None:
        table = table.slice(0, limit)
    if fmt == "table":
        _table_table(table, limit)
    elif fmt == "parquet":
        _table_parquet(table, output)
    elif fmt == "jsonl":
        fields = list(table.schema)
        write_lines((json.dumps({f.name: _json_value(v, f.type) for f, v in zip(fields, row)},
                                 ensure_ascii=False, separators=(",", ":")) + "\n"
                      for row in _rows(table)), output)
    else:
        write_lines(_table_csv_lines(table), output)


def _rows(table):
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return zip(*columns) if columns else iter(())


def _json_value(v, t):
    """A value of Arrow type *t* as Spark's to_json writes it: maps as objects (keys as text),
    binary as base64, timestamps as ISO 8601."""
    import base64
    import datetime
    import decimal

    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_map(t):
        return {_key_text(k, t.key_type): _json_value(x, t.item_type) for k, x in v}
    if pa.types.is_struct(t):
        return {f.name: _json_value(v[f.name], f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_json_value(x, t.value_type) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, datetime.datetime):
        text = v.strftime("%Y-%m-%dT%H:%M:%S.%f")
        if v.tzinfo is None:
            return text
        return text + ("Z" if v.utcoffset() == datetime.timedelta(0) else v.strftime("%z"))
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _key_text(k, t) -> str:
    if isinstance(k, str):
        return k
    value = _json_value(k, t)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if isinstance(value, (dict, list)) \
        else _text(value, None)


def _text(v, t) -> str | None:
    """A value as one cell of text (the terminal table, CSV)."""
    if v is None:
        return None
    if t is not None:
        v = _json_value(v, t)
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _table_csv_lines(table):
    types = [f.type for f in table.schema]
    rows = ([_text(v, t) for v, t in zip(row, types)] for row in _rows(table))
    yield from csv_lines(itertools.chain([table.column_names], rows))


def _table_parquet(table, output: str) -> None:
    """A directory holding one Parquet file, as Spark writes a small table."""
    import pyarrow.parquet as pq

    with directory_renamed_in(output) as target:
        if target.is_local:
            os.makedirs(target.path, exist_ok=True)
        with target.child("part-00000.parquet").open_output_stream() as out:
            pq.write_table(table, out)


def _table_table(table, limit: int | None) -> None:
    from rich.text import Text

    shown = limit if limit is not None else TABLE_ROWS
    t = Table(box=box.SIMPLE_HEAD)
    for name in table.column_names:
        t.add_column(Text(name), overflow="fold")
    rows = list(_rows(table.slice(0, shown)))
    types = [f.type for f in table.schema]
    for row in rows:
        t.add_row(*(Text("null", style="dim") if v is None else Text(_text(v, ty)) for v, ty in zip(row, types)))
    console = make_console()
    console.print(t)
    more = table.num_rows > shown
    console.print(row_count_line(len(rows), more))
