"""Tables of a diff confirmed identical in this process, without Spark.

`diff` compares a table with Spark joins, which count what differs and sample it, but each
costs Spark jobs (about a second a table however small it is, and a Spark start first).
Most tables a diff meets are small and identical (a rescale, a copy or a fix checked against
its source): those are decoded by the local engine (`readers.local`) and compared here as
rows keyed as the join keys them, or as sets or multisets of rows. Identical here implies
identical for the join (the same columns; maps equal whatever their entries' order; a null
or empty collection is an absent value), never the other way: a table that differs here,
holds a key twice or a float NaN, or whose files are bigger than :data:`LOCAL_DIFF_BYTES`,
is left to Spark, which says how it differs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from statectl.statefmt.model import Savepoint

from .local import local_table, table_files
from .resolve import TableChoice

LOCAL_DIFF_BYTES = 16 * 1024 * 1024  # per side: a table whose files hold more goes to Spark


@dataclass(frozen=True)
class Comparison:
    """How two tables are compared: rows matched on *keys*, their *values* compared (an empty
    value of one of *collections* is an absent one; with *drop_absent*, a row without any
    value is left out), or, without keys, whole rows as sets (a *multiset* counts duplicates)."""

    keys: tuple[str, ...] | None = None
    values: tuple[str, ...] = ()
    collections: frozenset[str] = frozenset()
    drop_absent: bool = False
    multiset: bool = False


class _Unsure(Exception):
    """The table holds something only Spark's comparison can judge."""


def small(sp: Savepoint, choice: TableChoice) -> bool:
    return sum(f.size for f in table_files(sp, choice)) <= LOCAL_DIFF_BYTES


def identical(sp_a: Savepoint, choice_a: TableChoice, sp_b: Savepoint, choice_b: TableChoice,
              how: Comparison) -> bool:
    """True when both tables are small and hold the same content as *how* compares it."""
    if not (small(sp_a, choice_a) and small(sp_b, choice_b)):
        return False
    try:
        side_a, side_b = (_content(local_table(sp, c), how) for sp, c in ((sp_a, choice_a), (sp_b, choice_b)))
    except _Unsure:
        return False
    return side_a == side_b


def _content(table: pa.Table, how: Comparison):
    if how.keys is None:
        rows = _rows(table, table.column_names)
        return Counter(rows) if how.multiset else set(rows)
    emptied = [name in how.collections for name in how.values]
    out = {}
    for key, value in zip(_rows(table, how.keys), _rows(table, how.values)):
        value = tuple(None if empty and v == () else v for empty, v in zip(emptied, value))
        if how.drop_absent and all(v is None for v in value):
            continue
        if key in out:
            raise _Unsure  # the join would pair every row of a key with every other
        out[key] = value
    return out


def _rows(table: pa.Table, names) -> list[tuple]:
    """The rows of *table*'s columns *names* as tuples of hashable, comparable values."""
    columns = [[_hashable(v, table.schema.field(n).type) for v in table.column(n).to_pylist()] for n in names]
    return list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]


def _hashable(value, t: pa.DataType):
    """*value* (of Arrow type *t*) as nested tuples; a map's entries sorted, so that two maps
    with the same entries are equal."""
    if value is None:
        return None
    if pa.types.is_map(t):
        entries = ((_hashable(k, t.key_type), _hashable(v, t.item_type)) for k, v in value)
        return tuple(sorted(entries, key=repr))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return tuple(_hashable(v, t.value_type) for v in value)
    if pa.types.is_struct(t):
        return tuple(_hashable(value[f.name], f.type) for f in t)
    if isinstance(value, float) and value != value:
        raise _Unsure  # NaN: Spark's equality holds NaN equal to NaN, Python's does not
    return value
