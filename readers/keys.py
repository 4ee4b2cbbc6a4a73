"""Key filters: the key groups that can hold some keys, and the exact filter on them.

A key group is computed with the savepoint's own hash, by the operator's table source
(Flink's from the operator's Java key type, statectl's own otherwise); only the splits
holding those key groups are read, then rows are filtered to the keys exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from statectl.statefmt.errors import KeyTypeError, UsageError
from statectl.statefmt.model import Operator


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


@dataclass(frozen=True)
class KeyFilter:
    """Keys to read, checked against the operator's key and hashed once: each key as a tuple of
    key-column values, and the key groups that can hold them (sorted, without repeats). A
    :class:`~readers.resolve.TableChoice` keeps it, so a read of the choice hashes nothing."""

    keys: tuple[tuple, ...]
    groups: tuple[int, ...]

    @classmethod
    def of(cls, source, keys) -> "KeyFilter":
        """The filter of *keys* (a value each, a sequence for a tuple key) on a read of *source*
        (a :class:`readers.tablesource.TableSource`), hashed by its format."""
        values = key_values(source.operator, keys)
        if not values:
            raise UsageError("keys: give at least one key")
        return cls(tuple(values), tuple(source.key_groups(values)))


def key_filter(source, keys, key_groups: tuple[int, int] | None):
    """(keys as tuples, their key groups, the span of key groups to read) of a read of
    *source* (a :class:`readers.tablesource.TableSource`) with a key filter *keys* (a
    :class:`KeyFilter`, or the keys to make one of) and a range *key_groups* ``(first,
    last)``; without keys: (None, None, *key_groups*)."""
    if key_groups is not None:
        first, last = key_groups
        if not (isinstance(first, int) and isinstance(last, int) and 0 <= first <= last):
            raise UsageError(f"key_groups must be (first, last) with 0 <= first <= last, got {key_groups!r}")
    if keys is None:
        return None, None, key_groups
    found = keys if isinstance(keys, KeyFilter) else KeyFilter.of(source, keys)
    keys, groups = list(found.keys), list(found.groups)
    if key_groups is not None:
        groups = [g for g in groups if key_groups[0] <= g <= key_groups[1]]
    return keys, groups, (groups[0], groups[-1]) if groups else (0, 0)


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
