"""Keyed state and timers: one table per operator, read split by split (key-group range)."""

from __future__ import annotations

from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, Operator, Savepoint

from .keys import key_filter
from .resolve import KEYED, TIMERS, check_domain
from .sources import table_source


def _key_columns(op: Operator, include_key_group: bool, namespace: bool = True) -> list[str]:
    cols = [KEY_GROUP_COLUMN] if include_key_group else []
    cols += op.keyed.key_names
    if namespace and op.keyed.namespace_type is not None:
        cols.append(NAMESPACE_COLUMN)
    return cols


def _in_range(df, key_groups):
    if key_groups is None:
        return df
    from pyspark.sql import functions as F

    return df.filter(F.col(KEY_GROUP_COLUMN).between(key_groups[0], key_groups[1]))


def _only_keys(df, op: Operator, keys, groups):
    if keys is None:
        return df
    from pyspark.sql import functions as F

    from .keys import key_condition

    if not groups:
        return df.limit(0)
    return df.filter(F.col(KEY_GROUP_COLUMN).isin(groups) & key_condition(op, keys))


def _rows(spark, sp: Savepoint, op: Operator, table: str, key_groups, verify, keys):
    """(DataFrame of every column, splits, table source) of the keyed table or the timers,
    narrowed to the key filter's keys and the *key_groups* range."""
    from .datasource import table_frame

    source = table_source(sp, op)
    keys, groups, span = key_filter(source, keys, key_groups)
    df, parts = table_frame(spark, source, table, groups, span, verify)
    return _only_keys(_in_range(df, span), op, keys, groups), parts, source


def keyed_table(spark, sp: Savepoint, op: Operator, states: tuple[str, ...] = (),
                key_groups: tuple[int, int] | None = None, include_key_group: bool = False,
                verify=None, keys=None):
    """(DataFrame, splits): key columns, [namespace], one column per keyed state
    (a Flink TTL state is followed by its ``<state>_ttl_ts`` timestamps).

    *verify* is called with the splits before Spark touches them.

    With *states*, only those columns, and only the rows where at least one of
    them has a value. *key_groups* restricts to an inclusive range of key groups
    (only the splits meeting it are read). *keys* (values, or sequences of values for
    several key columns) keeps only those keys, reading only their key groups.
    """
    from pyspark.sql import functions as F

    section = op.keyed
    df, parts, _ = _rows(spark, sp, op, KEYED, key_groups, verify, keys)
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

    check_domain(domain)
    df, parts, source = _rows(spark, sp, op, TIMERS, key_groups, verify, keys)
    if domain is not None:
        df = df.filter(F.col("domain") == domain)
    return df.select(*_key_columns(op, include_key_group, namespace=False), *source.timer_namespace(),
                     *source.timer_columns), parts
