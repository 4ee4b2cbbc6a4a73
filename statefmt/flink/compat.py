"""Whether a state a job wrote can be restored by another job's serializer: two serializer
snapshots (an old savepoint's, a new job's) compared type by type, without a JVM.

A verdict is one of :data:`LEVELS`, worst last, with the reasons naming each field:

- ``identical``: the same serializer snapshot;
- ``flink migrates``: Flink restores it and migrates the values itself (POJO fields added
  or removed, an Avro schema changed, TTL switched on or off by a Flink 2.x job);
- ``convertible``: Flink refuses it, but statectl can rewrite it losslessly as the new
  snapshot says (a number widened, NOT NULL made nullable, VARCHAR(n) to VARCHAR(m >= n),
  a nullable column appended, POJO/Tuple/Row fields changed so);
- ``partly compatible``: convertible, but a field NEW adds is an aggregate's accumulator (a SQL
  aggregate added to a GROUP BY's SELECT): the new aggregate starts from its initial value for the
  restored keys, which the user gives (`upgrade.py` decides, by the state; see :data:`PARTLY`);
- ``incompatible``: no lossless conversion (the reason names the field).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import types as T
from .rowdata import RowData, SqlValue
from .sqltypes import SqlType

IDENTICAL = "identical"
FLINK_MIGRATES = "flink migrates"
CONVERTIBLE = "convertible"
PARTLY = "partly compatible"
INCOMPATIBLE = "incompatible"
LEVELS = (IDENTICAL, FLINK_MIGRATES, CONVERTIBLE, PARTLY, INCOMPATIBLE)

# Java numbers that widen without loss: each to the ones after it that can hold all its values.
_WIDER = {"byte": ("short", "int", "long", "float", "double"), "short": ("int", "long", "float", "double"),
          "int": ("long", "double"), "float": ("double",)}
_SQL_WIDER = {"TINYINT": ("SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE"),
              "SMALLINT": ("INTEGER", "BIGINT", "FLOAT", "DOUBLE"), "INTEGER": ("BIGINT", "DOUBLE"),
              "FLOAT": ("DOUBLE",)}


@dataclass(frozen=True)
class Verdict:
    """*values*: a conversion must rewrite the values; without, a ``convertible`` state keeps
    its bytes and only its serializer snapshot changes (a SQL column made nullable or a longer
    VARCHAR: the binary row is the same)."""
    level: str
    reasons: tuple[str, ...] = ()
    values: bool = False
    added: tuple[str, ...] = ()  # paths of the fields NEW adds (null in the converted values)

    def __add__(self, other: "Verdict") -> "Verdict":
        level = max(self.level, other.level, key=LEVELS.index)
        return Verdict(level, self.reasons + other.reasons, self.values or other.values, self.added + other.added)


SAME = Verdict(IDENTICAL)


def _v(level: str, path: str, why: str, values: bool = True, added: bool = False) -> Verdict:
    return Verdict(level, (f"{path}: {why}" if path else why,), values and level == CONVERTIBLE,
                   (path,) if added and level == CONVERTIBLE else ())


def _join(path: str, name) -> str:
    return f"{path}.{name}" if path else str(name)


def compare(old: T.FlinkType, new: T.FlinkType, path: str = "", flink_2: bool = True) -> Verdict:
    """How values of *old*'s serializer restore with *new*'s; *path* names the value in the
    reasons. *flink_2*: the new job runs Flink 2.x, which migrates TTL switched on or off."""
    if old == new:
        return SAME
    ttl = isinstance(old, T.Ttl), isinstance(new, T.Ttl)
    if ttl[0] != ttl[1]:
        inner = compare(old.inner if ttl[0] else old, new.inner if ttl[1] else new, path, flink_2)
        switched = "TTL switched " + ("off" if ttl[0] else "on")
        return inner + _v(FLINK_MIGRATES if flink_2 else CONVERTIBLE, path,
                          switched if flink_2 else switched + " (Flink 1.x does not migrate it)")
    if type(old) is not type(new):
        return _v(INCOMPATIBLE, path, f"{old.describe()} became {new.describe()}")
    if not isinstance(old, (T.Scalar, RowData)) and old.serializer != new.serializer:
        return _v(INCOMPATIBLE, path, f"serializer {old.serializer or '?'} became {new.serializer or '?'}")
    for kind, how in _COMPARERS:
        if isinstance(old, kind):
            return how(old, new, path, flink_2)
    return _v(INCOMPATIBLE, path, f"{old.describe()} changed ({old.serializer or 'its serializer'})")


def _scalar(old: T.Scalar, new: T.Scalar, path: str, flink_2: bool) -> Verdict:
    if new.kind in _WIDER.get(old.kind, ()):
        return _v(CONVERTIBLE, path, f"{old.kind} widened to {new.kind}")
    return _v(INCOMPATIBLE, path, f"{old.kind} became {new.kind}")


def _inner(attribute: str):
    def compare_inner(old, new, path: str, flink_2: bool) -> Verdict:
        return compare(getattr(old, attribute), getattr(new, attribute), path, flink_2)
    return compare_inner


def _map(old: T.Map, new: T.Map, path: str, flink_2: bool) -> Verdict:
    return compare(old.key, new.key, _join(path, "key"), flink_2) + \
        compare(old.value, new.value, _join(path, "value"), flink_2)


def _timer(old: T.Timer, new: T.Timer, path: str, flink_2: bool) -> Verdict:
    return compare(old.key, new.key, _join(path, "key"), flink_2) + \
        compare(old.namespace, new.namespace, _join(path, "namespace"), flink_2)


def _pojo(old: T.Pojo, new: T.Pojo, path: str, flink_2: bool) -> Verdict:
    if old.pojo_class != new.pojo_class:
        return _v(INCOMPATIBLE, path, f"POJO class {old.pojo_class} became {new.pojo_class}")
    fields_old, fields_new = dict(old.fields), dict(new.fields)
    verdict = SAME
    for name in fields_old.keys() - fields_new.keys():
        verdict += _v(FLINK_MIGRATES, _join(path, name), "POJO field removed")
    for name in fields_new.keys() - fields_old.keys():
        verdict += _v(FLINK_MIGRATES, _join(path, name), "POJO field added (null or 0 in restored values)")
    for name in fields_old.keys() & fields_new.keys():
        verdict += compare(fields_old[name], fields_new[name], _join(path, name), flink_2)
    return verdict


def _tuple(old: T.Tuple, new: T.Tuple, path: str, flink_2: bool) -> Verdict:
    if len(old.fields) != len(new.fields):
        return _v(INCOMPATIBLE, path, f"a tuple of {len(old.fields)} fields became one of {len(new.fields)}")
    verdict = SAME
    for i, (a, b) in enumerate(zip(old.fields, new.fields)):
        verdict += compare(a, b, _join(path, f"f{i}"), flink_2)
    return verdict


def _row(old: T.Row, new: T.Row, path: str, flink_2: bool) -> Verdict:
    """A Row's fields by name: one added is null in restored values, one removed is dropped."""
    fields_old, fields_new = dict(old.fields), dict(new.fields)
    verdict = SAME
    for name in fields_old.keys() - fields_new.keys():
        verdict += _v(INCOMPATIBLE, _join(path, name), "Row field removed (its values would be lost)")
    for name in [n for n, _ in new.fields if n not in fields_old]:
        verdict += _v(CONVERTIBLE, _join(path, name), "Row field added (null in restored values)", added=True)
    for name in fields_old.keys() & fields_new.keys():
        verdict += compare(fields_old[name], fields_new[name], _join(path, name), flink_2)
    return verdict


def _avro(old, new, path: str, flink_2: bool) -> Verdict:
    return _v(FLINK_MIGRATES, path, "Avro schema changed (Flink resolves the old writer schema "
                                    "against the new one, as Avro's schema evolution allows)")


def _row_data(old: RowData, new: RowData, path: str, flink_2: bool) -> Verdict:
    """SQL rows by position: a column appended must be nullable (null in restored rows)."""
    verdict = SAME
    for i, (a, b) in enumerate(zip(old.fields, new.fields)):
        verdict += compare_sql(a, b, _join(path, f"f{i}"))
    for i, b in enumerate(new.fields[len(old.fields):], len(old.fields)):
        verdict += _v(CONVERTIBLE, _join(path, f"f{i}"), f"column {b.sql()} appended (null in restored rows)",
                      added=True) \
            if b.nullable else _v(INCOMPATIBLE, _join(path, f"f{i}"), f"column {b.sql()} appended: no value "
                                  "for the restored rows")
    if len(new.fields) < len(old.fields):
        verdict += _v(INCOMPATIBLE, path, f"{len(old.fields) - len(new.fields)} column(s) removed from the end")
    return verdict


def _sql_value(old: SqlValue, new: SqlValue, path: str, flink_2: bool) -> Verdict:
    return compare_sql(old.type, new.type, path)


def compare_sql(old: SqlType, new: SqlType, path: str) -> Verdict:
    """Two SQL types of one column (or nested field)."""
    if old == new:
        return SAME
    verdict = SAME
    if old.nullable != new.nullable:
        if new.nullable:
            verdict += _v(CONVERTIBLE, path, "NOT NULL made nullable", values=False)
        else:
            verdict += _v(INCOMPATIBLE, path, "nullable made NOT NULL")
    a, b = _with_nullable(old, True), _with_nullable(new, True)
    if a == b:
        return verdict
    if a.root == b.root == "VARCHAR" or (a.root == "CHAR" and b.root == "VARCHAR"):
        if b.length >= a.length:  # the same string bytes (CHAR values are stored padded)
            return verdict + _v(CONVERTIBLE, path, f"{a.sql()} became {b.sql()}", values=False)
        return verdict + _v(INCOMPATIBLE, path, f"{a.sql()} became {b.sql()} (values may be cut)")
    if b.root in _SQL_WIDER.get(a.root, ()):
        return verdict + _v(CONVERTIBLE, path, f"{a.sql()} widened to {b.sql()}")
    if a.root == b.root == "DECIMAL" and b.scale >= a.scale and b.precision - b.scale >= a.precision - a.scale:
        return verdict + _v(CONVERTIBLE, path, f"{a.sql()} widened to {b.sql()}")
    if a.root == b.root and a.root in ("ROW", "ARRAY", "MULTISET", "MAP") and len(a.children) == len(b.children):
        for i, (x, y) in enumerate(zip(a.children, b.children)):
            verdict += compare_sql(x, y, _join(path, a.names[i] if a.names else i))
        return verdict if a.names == b.names else verdict + _v(INCOMPATIBLE, path, "ROW field names changed")
    return verdict + _v(INCOMPATIBLE, path, f"{a.sql()} became {b.sql()}")


def _with_nullable(t: SqlType, nullable: bool) -> SqlType:
    from dataclasses import replace
    return replace(t, nullable=nullable)


_COMPARERS = (
    (T.Scalar, _scalar), (T.Nullable, _inner("inner")), (T.Ttl, _inner("inner")), (T.List, _inner("element")),
    (T.Map, _map), (T.Timer, _timer), (T.PrimitiveArray, _inner("element")), (T.Pojo, _pojo), (T.Tuple, _tuple), (T.Row, _row), (RowData, _row_data), (SqlValue, _sql_value),
    (T.Avro, _avro), (T.AvroRecord, _avro),
)
