"""`statectl read` and `statectl sql` rows read by Spark, as a DataFrame: printed as a table,
JSON lines or CSV, or written as a file or a Parquet directory.

Spark turns values into text inside its executors (to_json, casts); the driver only streams
the finished lines or a bounded number of table rows.
"""

from __future__ import annotations

import itertools

from rich import box
from rich.table import Table

from .output import make_console
from .results import (TABLE_ROWS, check_frame_output, csv_lines, directory_renamed_in, row_count_line,
                      write_lines)

_JSON_OPTIONS = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}


def write_frame(df, fmt: str, output: str | None = None, limit: int | None = None,
                overwrite: bool = False) -> None:
    """Print or write a DataFrame as a table, JSON lines, CSV or Parquet.

    A file or directory output appears whole (written aside, then renamed in).
    """
    check_frame_output(fmt, output, overwrite=overwrite)
    if fmt == "table":
        _frame_table(df, limit)
        return
    if limit is not None:
        df = df.limit(limit)
    if fmt == "parquet":
        _frame_parquet(df, output, overwrite)
    elif fmt == "jsonl":
        write_lines(_json_lines(df), output)
    else:
        write_lines(_csv_lines(df), output)


def _positional(df):
    """*df* with columns renamed ``_c0``... so duplicate or odd names select safely."""
    return df.toDF(*[f"_c{i}" for i in range(len(df.columns))])


def _text_columns(df):
    """Each column as display text: nested values as JSON, binary as base64, timestamps
    as ISO 8601 (as in JSON lines), null kept."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out = []
    for i, field in enumerate(df.schema.fields):
        c = F.col(f"_c{i}")
        t = field.dataType
        if isinstance(t, (T.ArrayType, T.MapType, T.StructType)):
            c = F.to_json(c, _JSON_OPTIONS)
        elif isinstance(t, T.BinaryType):
            c = F.base64(c)
        elif isinstance(t, T.TimestampType):
            c = F.date_format(c, _JSON_OPTIONS["timestampFormat"])
        elif isinstance(t, T.TimestampNTZType):
            c = F.date_format(c, _JSON_OPTIONS["timestampNTZFormat"])
        elif not isinstance(t, T.StringType):
            c = c.cast("string")
        out.append(c.alias(f"_c{i}"))
    return _positional(df).select(*out)


def _json_lines(df):
    from pyspark.sql import functions as F

    names = df.columns
    fields = [F.col(f"_c{i}").alias(name) for i, name in enumerate(names)]
    lines = _positional(df).select(F.to_json(F.struct(*fields), _JSON_OPTIONS))
    for row in lines.toLocalIterator():
        yield row[0] + "\n"


def _csv_lines(df):
    yield from csv_lines(itertools.chain([df.columns], _text_columns(df).toLocalIterator()))


def _frame_parquet(df, output: str, overwrite: bool = False) -> None:
    from statectl.readers.files import hadoop_scheme, hadoop_uri, spark_can_open
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.fs import Location

    scheme = hadoop_scheme(Location.of(output))
    if not spark_can_open(df.sparkSession, scheme):
        raise UsageError(f"{output}: Spark writes Parquet to {scheme}:// through a Hadoop filesystem this "
                         "Spark does not have (for s3a: the hadoop-aws jars); write to a local path, or "
                         "read with --engine local, which writes Parquet through pyarrow")
    with directory_renamed_in(output) as target:
        df.write.mode("overwrite" if overwrite else "errorifexists").parquet(hadoop_uri(target))


def _frame_table(df, limit: int | None) -> None:
    from rich.text import Text

    shown = limit if limit is not None else TABLE_ROWS
    probe = shown if limit is not None else shown + 1  # one more row tells whether rows were left out
    rows = _text_columns(df).limit(probe).collect() if probe else []
    more = len(rows) > shown
    table = Table(box=box.SIMPLE_HEAD)
    for name in df.columns:
        table.add_column(Text(name), overflow="fold")
    for row in rows[:shown]:
        table.add_row(*(Text("null", style="dim") if v is None else Text(v) for v in row))
    console = make_console()
    console.print(table)
    console.print(row_count_line(len(rows[:shown]), more))
