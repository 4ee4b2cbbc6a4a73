"""Input columns of a Flink write: their presence, the Flink types they are written as, and
the SQL that feeds them to the encoders."""

from __future__ import annotations

import pyarrow as pa

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import check_written_type, derive_type
from statectl.statefmt.model import TTL_SUFFIX

from ..errors import SpecError
from ..sql import q

def arrow_type(df, column: str) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(df.schema[column].dataType, timezone="UTC")


def connector_layout(t: T.FlinkType | None, df, column: str) -> str | None:
    """The connector layout a byte-array state's struct *column* holds (its rows as a
    connector state reads, maybe fixed), written back as the connector's serializer writes
    them (`statefmt.flink.connector_encode`); None for any other column or state."""
    from pyspark.sql.types import StructType

    from statectl.statefmt.flink.connector_encode import layout_of

    spark_type = df.schema[column].dataType
    if not isinstance(t, T.Bytes) or not isinstance(spark_type, StructType):
        return None
    return layout_of(spark_type.fieldNames())


def check_columns(df, columns, where: str) -> None:
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise SpecError(f"{where}: missing column(s) {', '.join(map(repr, absent))}; "
                        f"the input has {', '.join(map(repr, df.columns))}")


def written_type(t: T.FlinkType | None, df, column: str, where: str) -> T.FlinkType:
    """The Flink type *column* is written as: *t* (declared; the column must widen to it) or
    the one its Arrow type implies."""
    try:
        if t is not None:
            check_written_type(arrow_type(df, column), t, f"{where}, column {column!r}")
            return t
        return derive_type(arrow_type(df, column), f"{where}, column {column!r}")
    except FlinkEncodeError as e:
        raise SpecError(str(e)) from None


def ttl_wrapped(t: T.FlinkType, ttl: bool) -> T.FlinkType:
    return T.Ttl(t, "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer") if ttl else t


def ttl_input(state, value_column: str, ttl: bool, df, state_id: int, columns: dict, where: str) -> bool:
    """Whether the input gives a TTL state's last-access timestamps: its ``ttl_column``, else a
    column named ``<value column>_ttl_ts`` (as the reader names them) when there is one. Adds it
    to *columns* as ``_ttl<state id>``."""
    column = state.ttl_column or f"{value_column}{TTL_SUFFIX}"
    if column not in df.columns:
        if state.ttl_column:
            check_columns(df, [column], where)
        return False
    if not ttl:
        if state.ttl_column:
            raise SpecError(f"{where}: ttl_column {column!r} is given, but the state has no TTL "
                            "(flink: {ttl: true} in its binding)")
        return False
    columns[f"_ttl{state_id}"] = q(column)
    return True



def order_sql(df, column: str, where: str) -> str:
    from pyspark.sql import types as st

    t = df.schema[column].dataType
    c = q(column)
    if isinstance(t, (st.ByteType, st.ShortType, st.IntegerType, st.LongType)):
        return f"CAST({c} AS BIGINT)"
    if isinstance(t, (st.TimestampType, st.TimestampNTZType)):
        return f"unix_micros({c})"
    if isinstance(t, st.DateType):
        return f"CAST(unix_date({c}) AS BIGINT)"
    raise SpecError(f"{where}: order_by needs an integer, date or timestamp column in a Flink savepoint; "
                    f"{column!r} is {t.simpleString()}")
