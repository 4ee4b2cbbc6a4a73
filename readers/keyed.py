"""Keyed state and timers: one table per operator, read file by file (key-group range)."""

from __future__ import annotations

from statectl.statefmt.canonical import files_for_range, keyed_schema, timers_schema
from statectl.statefmt.errors import UsageError
from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Operator, Savepoint
from statectl.statefmt.vocabulary import Format, TimerDomain

from .files import read_splits, splits


def _key_columns(op: Operator, include_key_group: bool) -> list[str]:
    cols = [KEY_GROUP_COLUMN] if include_key_group else []
    cols += op.keyed.key_names
    if op.keyed.namespace_type is not None:
        cols.append(NAMESPACE_COLUMN)
    return cols


def _files_in(files, key_groups):
    if key_groups is None:
        return list(files)
    first, last = key_groups
    if not (isinstance(first, int) and isinstance(last, int) and 0 <= first <= last):
        raise UsageError(f"key_groups must be (first, last) with 0 <= first <= last, got {key_groups!r}")
    return files_for_range(files, first, last)


def _in_range(df, key_groups):
    if key_groups is None:
        return df
    from pyspark.sql import functions as F

    return df.filter(F.col(KEY_GROUP_COLUMN).between(key_groups[0], key_groups[1]))


def _key_filter(sp: Savepoint, op: Operator, keys, key_groups):
    """(keys as tuples, their key groups, the key-group range to read) for a key filter."""
    if keys is None:
        return None, None, key_groups
    from .keys import key_groups as groups_of
    from .keys import key_values

    keys = key_values(op, keys)
    if not keys:
        raise UsageError("keys: give at least one key")
    groups = groups_of(sp, op, keys)
    if key_groups is not None:
        groups = [g for g in groups if key_groups[0] <= g <= key_groups[1]]
    return keys, groups, (groups[0], groups[-1]) if groups else (0, 0)


def _only_keys(df, op: Operator, keys, groups):
    if keys is None:
        return df
    from pyspark.sql import functions as F

    from .keys import key_condition

    if not groups:
        return df.limit(0)
    return df.filter(F.col(KEY_GROUP_COLUMN).isin(groups) & key_condition(op, keys))


def keyed_table(spark, sp: Savepoint, op: Operator, states: tuple[str, ...] = (),
                key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
                verify=None, keys=None):
    """(DataFrame, splits): key columns, [namespace], one column per keyed state
    (a Flink TTL state is followed by its ``<state>_ttl_ts`` timestamps).

    *verify* is called with the splits before Spark touches them.

    With *states*, only those columns, and only the rows where at least one of
    them has a value. *key_groups* restricts to an inclusive range of key groups
    (only the files meeting it are read). *keys* (values, or sequences of values for
    several key columns) keeps only those keys, reading only their key groups.
    """
    from pyspark.sql import functions as F

    section = op.keyed
    schema = keyed_schema(section)
    keys, groups, key_groups = _key_filter(sp, op, keys, key_groups)
    if op.format == Format.FLINK:  # files: size only (Flink keeps no checksums)
        from .flink import flink_keyed_table

        parts = splits(sp, section.files, None)
        if verify is not None:
            verify(parts)
        df = _in_range(flink_keyed_table(spark, sp, op, key_groups=groups), key_groups)
    elif op.format == Format.ROCKSDB:  # files are verified in the tasks that fetch them
        from .native import native_table

        parts, df = [], _in_range(native_table(spark, sp, op), key_groups)
    else:
        schema = keyed_schema(section)
        parts = splits(sp, _files_in(section.files, key_groups), schema)
        if verify is not None:
            verify(parts)
        df = _in_range(read_splits(spark, schema, parts), key_groups)
    df = _only_keys(df, op, keys, groups)
    chosen = list(states) or [s.name for s in section.states]
    if states:
        present = F.col(chosen[0]).isNotNull()
        for name in chosen[1:]:
            present = present | F.col(name).isNotNull()
        df = df.filter(present)
    columns = [c for name in chosen for c in section.state(name).columns]
    return df.select(*_key_columns(op, include_key_group), *columns), parts


def timers_table(spark, sp: Savepoint, op: Operator, domain: str | None = None,
                 key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
                 verify=None, keys=None):
    """(DataFrame, splits): key columns, [namespace], ``timestamp``, ``domain`` (and
    ``service`` for Flink)."""
    from pyspark.sql import functions as F

    if domain is not None and domain not in TimerDomain.words():
        raise UsageError(f"timer domain must be one of {', '.join(TimerDomain)}, got {domain!r}")
    section = op.keyed
    schema = timers_schema(section)
    keys, groups, key_groups = _key_filter(sp, op, keys, key_groups)
    if op.format == Format.FLINK:
        from .flink import flink_keyed_table

        parts = splits(sp, section.files, None)
        if verify is not None:
            verify(parts)
        df = _in_range(flink_keyed_table(spark, sp, op, timers=True, key_groups=groups), key_groups)
    elif op.format == Format.ROCKSDB:
        from .native import native_table

        parts, df = [], _in_range(native_table(spark, sp, op, timers=True), key_groups)
    else:
        parts = splits(sp, _files_in(section.timers, key_groups), schema)
        if verify is not None:
            verify(parts)
        df = _in_range(read_splits(spark, schema, parts), key_groups)
    df = _only_keys(df, op, keys, groups)
    if domain is not None:
        df = df.filter(F.col("domain") == domain)
    service = ["service"] if op.format == Format.FLINK else []  # Flink: the timer service's name
    return df.select(*_key_columns(op, include_key_group), "timestamp", "domain", *service), parts
