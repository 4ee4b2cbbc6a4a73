"""Checks on input DataFrames: columns present, types usable, types of Spark columns."""

from __future__ import annotations

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.keygroups import check_key_type
from statectl.statefmt.types import DataType, from_arrow, quote_identifier, to_spark_ddl, type_str

from ..errors import InputError

NUMERIC = ("int8", "int16", "int32", "int64", "float32", "float64")
_WIDENING = {
    "int8": ("int16", "int32", "int64"),
    "int16": ("int32", "int64"),
    "int32": ("int64",),
    "float32": ("float64",),
}


def require_columns(df, columns, what: str) -> None:
    """Raise InputError naming every column of *columns* that *df* lacks."""
    present = set(df.columns)
    missing = [c for c in columns if c not in present]
    if missing:
        raise InputError(
            f"{what}: missing column(s) {', '.join(map(repr, missing))}; "
            f"the input has {', '.join(map(repr, df.columns)) or '(no columns)'}"
        )


def spark_field_type(df, column: str) -> DataType:
    """The statefmt type of a Spark column."""
    from pyspark.sql.pandas.types import to_arrow_type

    spark_type = df.schema[column].dataType
    try:
        return nullable_fields(from_arrow(to_arrow_type(spark_type, timezone="UTC")))
    except StatectlError as e:
        raise InputError(f"column {column!r}: {e}") from None
    except Exception:  # a Spark type Arrow cannot hold (intervals, variants...)
        raise InputError(
            f"column {column!r} has Spark type {spark_type.simpleString()}, "
            "which cannot be stored in a savepoint"
        ) from None


def nullable_fields(t: DataType) -> DataType:
    """*t* with every struct field nullable: a null struct's fields are null too."""
    if isinstance(t, str):
        return t
    (tag, arg), = t.items()
    if tag == "list":
        return {"list": nullable_fields(arg)}
    if tag == "map":
        return {"map": {"key": nullable_fields(arg["key"]), "value": nullable_fields(arg["value"])}}
    if tag == "struct":
        return {"struct": [{"name": f["name"], "type": nullable_fields(f["type"]), "nullable": True}
                           for f in arg]}
    return t


def key_types(df, key: list[str], what: str) -> list[DataType]:
    """The types of the key columns, each checked to be usable as a key."""
    require_columns(df, key, what)
    types = []
    for name in key:
        t = spark_field_type(df, name)
        try:
            check_key_type(t, name)
        except StatectlError as e:
            raise InputError(f"{what}: {e}") from None
        types.append(t)
    return types


def fits(actual: DataType, wanted: DataType) -> bool:
    """Whether a column of type *actual* can be stored as *wanted* without loss."""
    return actual == wanted or wanted in _WIDENING.get(actual, ())


def cast_to(column: str, actual: DataType, wanted: DataType, what: str) -> str:
    """SQL for *column* as type *wanted*, or InputError if it does not fit."""
    if not fits(actual, wanted):
        raise InputError(
            f"{what}: column {column!r} has type {type_str(actual)}, expected {type_str(wanted)}"
        )
    q = quote_identifier(column)
    if actual == wanted:
        return q
    return f"CAST({q} AS {to_spark_ddl(wanted)})"


def require_numeric(column: str, t: DataType, what: str, function: str) -> None:
    if t not in NUMERIC and not (isinstance(t, dict) and "decimal" in t):
        raise InputError(
            f"{what}: {function} needs a numeric column, but {column!r} has type {type_str(t)}"
        )

