"""Key filters: the key groups that can hold some keys, and the exact filter on them.

A key group is computed with the savepoint's own hash: Flink's
(`statefmt.flink.keyhash`, the operator's Java key type) for a Flink operator,
statectl's (`statefmt.keygroups`) otherwise; only the splits or files holding
those key groups are read, then rows are filtered to the keys exactly.
"""

from __future__ import annotations

import json

from statectl.statefmt.errors import KeyTypeError, UsageError
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.vocabulary import Format


def key_values(op: Operator, keys) -> list[tuple]:
    """Each key as a tuple of key-column values (a scalar key as a 1-tuple)."""
    width = len(op.keyed.key)
    out = []
    for key in keys:
        values = tuple(key) if isinstance(key, (list, tuple)) else (key,)
        if len(values) != width:
            raise KeyTypeError(f"operator {op.label} has {width} key column(s) "
                               f"({', '.join(op.keyed.key_names)}); key {key!r} has {len(values)}")
        out.append(values)
    return out


def key_groups(sp: Savepoint, op: Operator, keys: list[tuple]) -> list[int]:
    """The key groups of *keys* (tuples of key-column values), sorted, without repeats."""
    if op.format == Format.FLINK:
        from statectl.statefmt.flink.keyhash import flink_key_group
        from statectl.statefmt.flink.model import flink_savepoint, java_key_type

        from statectl.statefmt.flink.rowdata import RowData
        from statectl.statefmt.flink.rowdata_write import row_key_group

        info = flink_savepoint(sp).operator(op.operator_id)
        if isinstance(info.key_type, RowData):  # a SQL operator's key row
            try:
                return sorted({row_key_group(k, info.key_type.fields, op.max_parallelism) for k in keys})
            except KeyTypeError as e:
                raise KeyTypeError(f"operator {op.label}: key filter: {e}") from None
        java = java_key_type(info.key_type, op.label)
        groups = {flink_key_group(k if isinstance(java, tuple) else k[0], java, op.max_parallelism)
                  for k in keys}
    else:
        from statectl.statefmt.keygroups import key_group_for_key

        groups = {key_group_for_key(list(k), op.keyed.key_types, op.max_parallelism) for k in keys}
    return sorted(groups)


def key_condition(op: Operator, keys: list[tuple]):
    """A Spark condition true exactly on rows of one of *keys*."""
    from functools import reduce

    from pyspark.sql import functions as F

    def one(values):
        parts = [F.col(name) == F.lit(v) for name, v in zip(op.keyed.key_names, values)]
        return reduce(lambda a, b: a & b, parts)

    return reduce(lambda a, b: a | b, (one(k) for k in keys))


def parse_key(op: Operator, text: str):
    """A key as given on the command line: a string key as is; a number or boolean as
    JSON; a key of several columns (a tuple) as a JSON array, e.g. ``["a", 1]``."""
    types = op.keyed.key_types
    if len(types) == 1 and types[0] == "string":
        return text
    try:
        value = json.loads(text)
    except ValueError:
        raise UsageError(f"--key {text!r}: not a JSON value (a key of operator {op.label} is "
                         f"{', '.join(map(str, types))}; a tuple key is written [\"a\", 1])") from None
    if len(types) > 1 and not isinstance(value, list):
        raise UsageError(f"--key {text!r}: operator {op.label} has a key of {len(types)} columns; "
                         "write it as a JSON array, e.g. [\"a\", 1]")
    return value
