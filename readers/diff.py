"""`diff_savepoints`: what differs between two savepoints, in metadata and in content.

    from statectl.readers.diff import diff_savepoints
    d = diff_savepoints(spark, "sp-41", "sp-42", limit=5)
    d.identical, d.same_content, d.tables[0].only_in_a

Operators are matched by operator id; an operator that only one side has is
matched with one of the other side as *renamed* when they share their files
(a shallow copy) or, failing that, their state declarations exactly. Content
is compared per table, by Spark joins on the key (and namespace), so nothing
but counts and ``limit`` sample rows per category reaches the driver; a small
table both sides hold alike is confirmed identical in this process first
(`readers.diff_local`), without Spark. What counts as a difference:

- keyed table: per (key, namespace), the states both sides declare with the same
  type; a state that is null (or an empty collection) counts as absent, so a key
  with no value left on one side and no row on the other is identical;
- timers: sets of (key, namespace, timestamp, domain);
- broadcast state: per map key; list state: multisets of values (redistribution
  does not change content); union state: sets of values.

Layout is not content: the physical format, the files and the key-group
assignment of rows never make a difference; parallelism and max parallelism are
metadata differences (see ``SavepointDiff.same_content``). Nothing here knows a
format: a savepoint is whatever :func:`statectl.statefmt.formats.load` returns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import NAMESPACE_COLUMN, Operator, Savepoint
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.types import type_str
from statectl.statefmt.vocabulary import OperatorStateKind, StateKind

from .diff_local import Comparison, identical
from .reader import SavepointReader
from .resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice

ONLY_IN_A = "only_in_a"
ONLY_IN_B = "only_in_b"
CHANGED = "changed"
CATEGORIES = (ONLY_IN_A, ONLY_IN_B, CHANGED)

KEYED_TABLE = "(keyed)"
TIMERS_TABLE = "(timers)"

_SIDE = "_statectl_side"
_CATEGORY = "_statectl_diff"


@dataclass(frozen=True)
class MetadataChange:
    """One difference of declarations: ``what`` is parallelism, max_parallelism, key,
    namespace, state_added, state_removed or state_type; ``a``/``b`` the two sides' values."""

    operator: str
    what: str
    state: str | None = None
    a: object = None
    b: object = None


@dataclass(frozen=True)
class TableDiff:
    """One table compared row by row: counts per category and up to ``limit`` samples each.

    A sample is ``{"key": {...}, "a": {...}, "b": {...}}`` (``a``/``b`` absent on the
    side that lacks the row); for timers and list/union state the whole row is the key.
    """

    operator: str
    table: str  # KEYED_TABLE, TIMERS_TABLE or an operator state's name
    kind: str
    only_in_a: int
    only_in_b: int
    changed: int
    samples: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return self.only_in_a == self.only_in_b == self.changed == 0


@dataclass(frozen=True)
class SavepointDiff:
    a: str | None
    b: str | None
    operators_added: tuple[str, ...]
    operators_removed: tuple[str, ...]
    operators_renamed: tuple[tuple[str, str, str], ...]  # (label in A, label in B, why)
    changes: tuple[MetadataChange, ...]
    tables: tuple[TableDiff, ...]

    @property
    def same_content(self) -> bool:
        """Same operators, states and rows; parallelism and max parallelism may differ."""
        layout = {"parallelism", "max_parallelism"}
        return (not self.operators_added and not self.operators_removed
                and not self.operators_renamed
                and all(c.what in layout for c in self.changes)
                and all(t.identical for t in self.tables))

    @property
    def identical(self) -> bool:
        return self.same_content and not self.changes


def diff_savepoints(spark, a: str | Savepoint, b: str | Savepoint, limit: int = 5,
                    engine: str = "auto") -> SavepointDiff:
    """Compare savepoint *a* with *b* (locations or loaded savepoints).

    *spark* is a session, or a function giving one, called only when a table needs Spark:
    with *engine* ``"auto"``, a small table both sides hold alike is confirmed identical in
    this process (`readers.diff_local`) and only the others are compared by Spark (so two
    small identical savepoints need no Spark at all); ``"spark"`` compares every table by Spark.
    """
    if engine not in ("auto", "spark"):
        raise UsageError(f"diff's engine must be auto or spark, got {engine!r}")
    sp_a = a if isinstance(a, Savepoint) else load(a)
    sp_b = b if isinstance(b, Savepoint) else load(b)
    pairs, added, removed, renamed = match_operators(sp_a, sp_b)
    changes: list[MetadataChange] = []
    for op_a, op_b in pairs:
        changes.extend(operator_changes(op_a, op_b))
    readers = _Readers(spark, sp_a, sp_b)
    tables = [_table_diff(readers, op_a.label, table, engine == "auto", limit)
              for op_a, op_b in pairs for table in _comparable_tables(op_a, op_b)]
    return SavepointDiff(sp_a.location, sp_b.location, tuple(added), tuple(removed), tuple(renamed),
                         tuple(changes), tuple(tables))


class _Readers:
    """The two savepoints' Spark readers, made (and Spark started) on first use."""

    def __init__(self, spark, sp_a: Savepoint, sp_b: Savepoint):
        self._spark, self.sp_a, self.sp_b = spark, sp_a, sp_b
        self._pair = None

    def pair(self) -> tuple[SavepointReader, SavepointReader]:
        if self._pair is None:
            spark = self._spark() if callable(self._spark) else self._spark
            self._pair = SavepointReader(spark, self.sp_a), SavepointReader(spark, self.sp_b)
        return self._pair


# --- metadata -----------------------------------------------------------------

def match_operators(sp_a: Savepoint, sp_b: Savepoint):
    """(pairs, added labels, removed labels, renamed (a, b, why)) of two savepoints' operators."""
    ids_b = {op.operator_id for op in sp_b.operators}
    ids_a = {op.operator_id for op in sp_a.operators}
    pairs = [(op, sp_b.operator(_ref(op))) for op in sp_a.operators if op.operator_id in ids_b]
    gone = [op for op in sp_a.operators if op.operator_id not in ids_b]
    new = [op for op in sp_b.operators if op.operator_id not in ids_a]
    renamed = []
    for why, signature in (("same files", lambda sp, op: _file_signature(sp, op)),
                           ("same state", lambda sp, op: _state_signature(op))):
        for op_a in list(gone):
            sig = signature(sp_a, op_a)
            if not sig:
                continue
            matches = [op_b for op_b in new if signature(sp_b, op_b) == sig]
            if len(matches) == 1 and sum(signature(sp_a, o) == sig for o in gone) == 1:
                op_b = matches[0]
                pairs.append((op_a, op_b))
                renamed.append((op_a.label, op_b.label, why))
                gone.remove(op_a)
                new.remove(op_b)
    return pairs, [op.label for op in new], [op.label for op in gone], renamed


def _ref(op: Operator) -> OperatorRef:
    return OperatorRef(operator_id=op.operator_id)


def _file_signature(sp: Savepoint, op: Operator):
    """The files an operator reads, by checksum where recorded, else by location."""
    return frozenset((f.checksum or str(file_location(sp, f.ref)), f.size) for f in op.data_files())


def _state_signature(op: Operator):
    """Every declaration of an operator's state (not its parallelism), or None if it has none."""
    if not op.state_names:
        return None
    keyed = None
    if op.keyed is not None:
        keyed = (json.dumps([[f.name, f.type] for f in op.keyed.key], sort_keys=True),
                 json.dumps(op.keyed.namespace_type, sort_keys=True),
                 frozenset(_keyed_declarations(op).items()))
    return keyed, frozenset(_operator_declarations(op).items())


def _keyed_declarations(op: Operator) -> dict[str, str]:
    if op.keyed is None:
        return {}
    return {s.name: f"{s.kind} {type_str(s.column_type)}" for s in op.keyed.states}


def _operator_declarations(op: Operator) -> dict[str, str]:
    return {s.name: f"operator {s.kind} " + (type_str(s.value_type) if s.key_type is None else
                                              f"{type_str(s.key_type)} -> {type_str(s.value_type)}")
            for s in op.operator_states}


def operator_changes(op_a: Operator, op_b: Operator) -> list[MetadataChange]:
    """What differs between the declarations of two matched operators."""
    label = op_a.label
    out = []
    for what in ("parallelism", "max_parallelism"):
        if getattr(op_a, what) != getattr(op_b, what):
            out.append(MetadataChange(label, what, None, getattr(op_a, what), getattr(op_b, what)))
    if op_a.keyed is not None and op_b.keyed is not None:
        key_a = [f"{f.name}: {type_str(f.type)}" for f in op_a.keyed.key]
        key_b = [f"{f.name}: {type_str(f.type)}" for f in op_b.keyed.key]
        if key_a != key_b:
            out.append(MetadataChange(label, "key", None, ", ".join(key_a), ", ".join(key_b)))
        ns_a, ns_b = op_a.keyed.namespace_type, op_b.keyed.namespace_type
        if ns_a != ns_b:
            out.append(MetadataChange(label, "namespace", None,
                                      None if ns_a is None else type_str(ns_a),
                                      None if ns_b is None else type_str(ns_b)))
    decl_a = {**_keyed_declarations(op_a), **_operator_declarations(op_a)}
    decl_b = {**_keyed_declarations(op_b), **_operator_declarations(op_b)}
    for name, t in decl_a.items():
        if name not in decl_b:
            out.append(MetadataChange(label, "state_removed", name, t, None))
        elif decl_b[name] != t:
            out.append(MetadataChange(label, "state_type", name, t, decl_b[name]))
    out.extend(MetadataChange(label, "state_added", name, None, t)
               for name, t in decl_b.items() if name not in decl_a)
    return out


# --- content ------------------------------------------------------------------

@dataclass(frozen=True)
class _Table:
    """One table both operators hold, and how its two sides are compared."""

    name: str  # KEYED_TABLE, TIMERS_TABLE or an operator state's name
    kind: str
    a: TableChoice
    b: TableChoice
    how: Comparison


def _comparable_tables(op_a: Operator, op_b: Operator) -> list[_Table]:
    """The tables of two matched operators whose declarations agree (the others are metadata
    changes)."""
    out = []
    keyed_a, keyed_b = op_a.keyed, op_b.keyed
    if (keyed_a is not None and keyed_b is not None and keyed_a.key == keyed_b.key
            and keyed_a.namespace_type == keyed_b.namespace_type):
        decl_b = _keyed_declarations(op_b)
        common = tuple(n for n, t in _keyed_declarations(op_a).items() if decl_b.get(n) == t)
        collections = frozenset(s.name for s in keyed_a.states if StateKind(s.kind).is_collection)
        if common:
            keys = keyed_a.key_names + ([NAMESPACE_COLUMN] if keyed_a.namespace_type is not None else [])
            out.append(_Table(KEYED_TABLE, "keyed", TableChoice(op_a, KEYED, common),
                              TableChoice(op_b, KEYED, common),
                              Comparison(tuple(keys), common, collections, drop_absent=True)))
        out.append(_Table(TIMERS_TABLE, "timers", TableChoice(op_a, TIMERS), TableChoice(op_b, TIMERS),
                          Comparison()))
    decl_b = _operator_declarations(op_b)
    for state, decl in zip(op_a.operator_states, _operator_declarations(op_a).values()):
        if decl_b.get(state.name) != decl:
            continue  # added, removed or retyped: a metadata change
        how = (Comparison(("key",), ("value",)) if state.kind == OperatorStateKind.BROADCAST
               else Comparison(multiset=state.kind == OperatorStateKind.LIST))
        out.append(_Table(state.name, f"operator {state.kind}", TableChoice(op_a, OPERATOR_STATE, (state.name,)),
                          TableChoice(op_b, OPERATOR_STATE, (state.name,)), how))
    return out


def _table_diff(readers: _Readers, label: str, table: _Table, local: bool, limit: int) -> TableDiff:
    """*table* confirmed identical in this process, else compared by Spark."""
    if local and identical(readers.sp_a, table.a, readers.sp_b, table.b, table.how):
        return TableDiff(label, table.name, table.kind, 0, 0, 0)
    reader_a, reader_b = readers.pair()
    df_a, df_b = reader_a.table(table.a), reader_b.table(table.b)
    how = table.how
    if how.keys is None:
        return _as_sets(label, table.name, table.kind, df_a, df_b, limit, multiset=how.multiset)
    if how.drop_absent:
        df_a, df_b = (_present(df, how.values, how.collections) for df in (df_a, df_b))
    return _joined(label, table.name, table.kind, df_a, df_b, list(how.keys), list(how.values), limit)


def _present(df, states: list[str], collections: set[str]):
    """*df* with empty collections as null and the rows where every state is null left out."""
    from pyspark.sql import functions as F

    df = df.select(*[F.when(F.size(c) > 0, F.col(c)).alias(c) if c in collections else F.col(c)
                     for c in df.columns])
    present = F.lit(False)
    for name in states:
        present = present | F.col(name).isNotNull()
    return df.filter(present)


def comparable(column, data_type):
    """*column* in a form Spark's equality and ordering accept: maps become their entries,
    sorted by key (Spark cannot compare maps), at any depth."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(data_type, T.MapType):
        entries = F.map_entries(column)
        inner = T.StructType([T.StructField("key", data_type.keyType),
                              T.StructField("value", data_type.valueType)])
        if _has_map(data_type.valueType) or _has_map(data_type.keyType):
            entries = F.transform(entries, lambda e: comparable(e, inner))
        return F.array_sort(entries)
    if isinstance(data_type, T.ArrayType) and _has_map(data_type.elementType):
        return F.transform(column, lambda e: comparable(e, data_type.elementType))
    if isinstance(data_type, T.StructType) and _has_map(data_type):
        return F.when(column.isNotNull(), F.struct(*[
            comparable(column[f.name], f.dataType).alias(f.name) for f in data_type.fields]))
    return column


def _has_map(data_type) -> bool:
    from pyspark.sql import types as T

    if isinstance(data_type, T.MapType):
        return True
    if isinstance(data_type, T.ArrayType):
        return _has_map(data_type.elementType)
    if isinstance(data_type, T.StructType):
        return any(_has_map(f.dataType) for f in data_type.fields)
    return False


def _joined(label, table, kind, df_a, df_b, keys: list[str], values: list[str], limit: int):
    """Rows matched on *keys* (null-safe): only in A, only in B, or with different *values*."""
    from pyspark.sql import functions as F

    def side(df, name):
        types = {f.name: f.dataType for f in df.schema.fields}
        return df.select(
            *[F.col(k).alias(f"k{i}") for i, k in enumerate(keys)],
            F.struct(*[F.col(v) for v in values]).alias(f"{name}_value"),
            F.struct(*[comparable(F.col(v), types[v]).alias(v) for v in values]).alias(f"{name}_cmp"),
            F.lit(True).alias(f"{name}_here"))

    a, b = side(df_a, "a"), side(df_b, "b")
    on = [a[f"k{i}"].eqNullSafe(b[f"k{i}"]) for i in range(len(keys))]
    joined = a.join(b, on, "full_outer")
    category = (F.when(F.col("b_here").isNull(), F.lit(ONLY_IN_A))
                .when(F.col("a_here").isNull(), F.lit(ONLY_IN_B))
                .when(~F.col("a_cmp").eqNullSafe(F.col("b_cmp")), F.lit(CHANGED)))
    key_struct = F.struct(*[F.coalesce(a[f"k{i}"], b[f"k{i}"]).alias(k) for i, k in enumerate(keys)])
    differing = joined.select(category.alias(_CATEGORY), F.to_json(key_struct).alias("key"),
                              F.to_json(F.col("a_value")).alias("a"),
                              F.to_json(F.col("b_value")).alias("b")).filter(
        F.col(_CATEGORY).isNotNull())
    return _summarised(label, table, kind, differing, limit)


def _as_sets(label, table, kind, df_a, df_b, limit: int, multiset: bool = False):
    """Whole rows as sets (or multisets): a row is only in A or only in B, never changed."""
    from pyspark.sql import functions as F

    def canonical(df):
        return df.select(*[comparable(F.col(f.name), f.dataType).alias(f.name)
                           for f in df.schema.fields])

    ca, cb = canonical(df_a), canonical(df_b)
    if multiset:
        only_a, only_b = ca.exceptAll(cb), cb.exceptAll(ca)
    else:
        only_a, only_b = ca.subtract(cb), cb.subtract(ca)
    differing = (only_a.select(F.lit(ONLY_IN_A).alias(_CATEGORY), F.to_json(F.struct(*ca.columns)).alias("key"))
                 .unionByName(only_b.select(F.lit(ONLY_IN_B).alias(_CATEGORY),
                                            F.to_json(F.struct(*cb.columns)).alias("key")))
                 .select(_CATEGORY, "key", F.lit(None).cast("string").alias("a"),
                         F.lit(None).cast("string").alias("b")))
    return _summarised(label, table, kind, differing, limit)


def _summarised(label, table, kind, differing, limit: int) -> TableDiff:
    """Counts per category (one aggregate) and up to *limit* sample rows of each."""
    from pyspark import StorageLevel

    differing = differing.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = {r[0]: r[1] for r in differing.groupBy(_CATEGORY).count().collect()}
        samples = {}
        for cat in CATEGORIES:
            if not counts.get(cat) or not limit:
                continue
            rows = (differing.filter(differing[_CATEGORY] == cat).select("key", "a", "b")
                    .orderBy("key").limit(limit).collect())
            samples[cat] = [_sample(r) for r in rows]
    finally:
        differing.unpersist()
    return TableDiff(label, table, kind, counts.get(ONLY_IN_A, 0), counts.get(ONLY_IN_B, 0),
                     counts.get(CHANGED, 0), samples)


def _sample(row) -> dict:
    out = {"key": json.loads(row["key"])}
    for side in ("a", "b"):
        if row[side] is not None:
            out[side] = json.loads(row[side])
    return out
