"""`statectl read` rows read by the local engine (no Spark), as pyarrow batches: the same
formats and the same text forms as a Spark DataFrame's (cli/frames.py). Batches are written
as they come (Parquet row groups, lines), so a read of any size holds one batch at a time;
the terminal table takes only the rows it shows."""

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
    """:func:`write_batches` of a whole pyarrow Table."""
    write_batches(table.schema, iter(table.to_batches()), fmt, output, limit, overwrite)


def write_batches(schema, batches, fmt: str, output: str | None = None, limit: int | None = None,
                  overwrite: bool = False) -> None:
    """:func:`write_frame` for pyarrow batches of *schema*, in the same text forms: nested values
    as JSON, binary as base64, timestamps as ISO 8601. Each batch is written as it comes."""
    check_frame_output(fmt, output, overwrite=overwrite)
    if limit is not None:
        batches = _first_rows(batches, limit)
    if fmt == "table":
        shown = limit if limit is not None else TABLE_ROWS
        _table_table(_table_of(schema, _first_rows(batches, shown + 1)), shown)
    elif fmt == "parquet":
        _table_parquet(schema, batches, output)
    elif fmt == "jsonl":
        fields = list(schema)
        write_lines((json.dumps({f.name: json_value(v, f.type) for f, v in zip(fields, row)},
                                 ensure_ascii=False, separators=(",", ":")) + "\n"
                      for batch in batches for row in _rows(batch)), output)
    else:
        write_lines(_table_csv_lines(schema, batches), output)


def _first_rows(batches, n: int):
    """The batches up to their first *n* rows; the decoding stops there."""
    for batch in batches:
        if n <= 0:
            return
        batch = batch.slice(0, n)
        n -= batch.num_rows
        yield batch


def _table_of(schema, batches):
    import pyarrow as pa

    return pa.Table.from_batches(list(batches), schema)


def _rows(table):
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return zip(*columns) if columns else iter(())


def json_value(v, t):
    """A value of Arrow type *t* as Spark's to_json writes it: maps as objects (keys as text),
    binary as base64, timestamps as ISO 8601."""
    import base64
    import datetime
    import decimal

    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_map(t):
        return {_key_text(k, t.key_type): json_value(x, t.item_type) for k, x in v}
    if pa.types.is_struct(t):
        return {f.name: json_value(v[f.name], f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [json_value(x, t.value_type) for x in v]
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
    value = json_value(k, t)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if isinstance(value, (dict, list)) \
        else cell_text(value, None)


def cell_text(v, t) -> str | None:
    """A value as one cell of text (the terminal table, CSV)."""
    if v is None:
        return None
    if t is not None:
        v = json_value(v, t)
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _table_csv_lines(schema, batches):
    types = [f.type for f in schema]
    rows = ([cell_text(v, t) for v, t in zip(row, types)] for batch in batches for row in _rows(batch))
    yield from csv_lines(itertools.chain([schema.names], rows))


def _table_parquet(schema, batches, output: str) -> None:
    """A directory holding one Parquet file, as Spark writes a small table, written a batch at a
    time (a row group of at most :data:`ROW_GROUP_ROWS` rows each)."""
    import pyarrow.parquet as pq

    with directory_renamed_in(output) as target:
        if target.is_local:
            os.makedirs(target.path, exist_ok=True)
        with target.child("part-00000.parquet").open_output_stream() as out, \
                pq.ParquetWriter(out, schema) as writer:
            for batch in batches:
                writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)


ROW_GROUP_ROWS = 1 << 20


def _table_table(table, shown: int) -> None:
    from rich.text import Text

    t = Table(box=box.SIMPLE_HEAD)
    for name in table.column_names:
        t.add_column(Text(name), overflow="fold")
    rows = list(_rows(table.slice(0, shown)))
    types = [f.type for f in table.schema]
    for row in rows:
        t.add_row(*(Text("null", style="dim") if v is None else Text(cell_text(v, ty)) for v, ty in zip(row, types)))
    console = make_console()
    console.print(t)
    more = table.num_rows > shown
    console.print(row_count_line(len(rows), more))
