"""Small builders of Spark SQL text: literals, identifiers, and error raising."""

from __future__ import annotations

from statectl.statefmt.keygroups import key_group_sql
from statectl.statefmt.types import quote_identifier

from .errors import NullKeyError, sql_error_prefix

q = quote_identifier


def lit(text: str) -> str:
    """A Spark SQL string literal holding *text*."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def raise_sql(cls, *parts: str) -> str:
    """``raise_error`` with a message made of literal text and SQL expressions.

    *parts* alternate: literal text, expression, literal text, ...
    """
    pieces = [lit(sql_error_prefix(cls) + parts[0])]
    for i, part in enumerate(parts[1:]):
        pieces.append(f"coalesce(CAST({part} AS STRING), 'null')" if i % 2 == 0 else lit(part))
    return f"raise_error(concat({', '.join(pieces)}))"


def key_repr_sql(key: list[str]) -> str:
    """SQL text showing a key as ``user=alice, n=3``."""
    parts = [f"concat({lit(name + '=')}, coalesce(CAST({q(name)} AS STRING), 'null'))" for name in key]
    return parts[0] if len(parts) == 1 else f"concat_ws(', ', {', '.join(parts)})"


def checked_key_group_sql(key: list[str], max_parallelism: int, what: str) -> str:
    """The key group of a row, failing the job with a clear message if a key column is null."""
    null = " OR ".join(f"{q(c)} IS NULL" for c in key)
    columns = ", ".join(key)
    message = lit(sql_error_prefix(NullKeyError) + f"{what}: a row has a null in key column(s) "
                  f"{columns}; keys may not be null")
    return f"CASE WHEN {null} THEN raise_error({message}) ELSE {key_group_sql(key, max_parallelism)} END"
