"""The table runtime's SQL types (`LogicalType`), as read from serializer snapshots.

`RowDataSerializer`, `ArrayDataSerializer` and `MapDataSerializer` snapshots hold the
`LogicalType`s of what they serialize as Java-serialized objects (`javaser.py`);
:func:`logical_type` turns one into a :class:`SqlType`, which knows its Arrow type,
how the binary formats lay it out (`rowdata.py`) and how SQL spells it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..errors import UnsupportedFlinkFeature
from .javaser import JavaClass, JavaEnum, JavaObject, java_list

MAX_LENGTH = 2147483647  # VARCHAR / VARBINARY of this length are STRING / BYTES

# Bytes an element takes in a BinaryArrayData (and in a row's 8-byte slot, from its start).
FIXED_WIDTH = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INTEGER": 4, "FLOAT": 4, "DATE": 4,
               "TIME_WITHOUT_TIME_ZONE": 4, "INTERVAL_YEAR_MONTH": 4, "BIGINT": 8, "DOUBLE": 8,
               "INTERVAL_DAY_TIME": 8}


@dataclass(frozen=True)
class SqlType:
    """One SQL type: its `LogicalTypeRoot` name, nullability, parameters and children."""
    root: str
    nullable: bool = True
    length: int | None = None  # CHAR, VARCHAR, BINARY, VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP*, intervals
    scale: int | None = None  # DECIMAL
    children: tuple["SqlType", ...] = ()  # ARRAY/MULTISET element, MAP key and value, ROW fields
    names: tuple[str, ...] = ()  # ROW field names
    class_name: str | None = None  # RAW and STRUCTURED: the Java class
    resolution: str | None = None  # intervals, as SQL spells them: YEAR(2) TO MONTH, DAY(2) TO SECOND(3)...

    @property
    def compact(self) -> bool:
        """Whether a DECIMAL or TIMESTAMP lives in its 8-byte slot (no variable part)."""
        if self.root == "DECIMAL":
            return self.precision <= 18
        return self.precision <= 3

    def arrow(self) -> pa.DataType:
        r = self.root
        if r in _ARROW:
            return _ARROW[r]
        if r == "DECIMAL":
            return pa.decimal128(self.precision, self.scale)
        if r == "TIMESTAMP_WITHOUT_TIME_ZONE":
            return pa.timestamp(_unit(self.precision))
        if r == "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
            return pa.timestamp(_unit(self.precision), tz="UTC")
        if r == "ARRAY":
            return pa.list_(self.children[0].arrow())
        if r == "MULTISET":
            return pa.map_(self.children[0].arrow(), pa.int32())
        if r == "MAP":
            return pa.map_(self.children[0].arrow(), self.children[1].arrow())
        if r in ("ROW", "STRUCTURED_TYPE"):
            return pa.struct([(n, c.arrow()) for n, c in zip(self.names, self.children)])
        return pa.binary()  # RAW: the bytes of its serializer, named by their class

    def sql(self) -> str:
        """The type as Flink's `asSerializableString` spells it."""
        r = self.root
        if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            text = f"{r}({self.length})"
        elif r == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif r == "TIMESTAMP_WITHOUT_TIME_ZONE":
            text = f"TIMESTAMP({self.precision})"
        elif r == "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
            text = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r == "TIME_WITHOUT_TIME_ZONE":
            text = f"TIME({self.precision})"
        elif r in ("INTERVAL_YEAR_MONTH", "INTERVAL_DAY_TIME"):
            text = "INTERVAL " + self.resolution
        elif r in ("ARRAY", "MULTISET"):
            text = f"{r}<{self.children[0].sql()}>"
        elif r == "MAP":
            text = f"MAP<{self.children[0].sql()}, {self.children[1].sql()}>"
        elif r == "ROW":
            text = "ROW<" + ", ".join(f"`{n}` {c.sql()}" for n, c in zip(self.names, self.children)) + ">"
        elif r in ("RAW", "STRUCTURED_TYPE"):
            text = f"{'RAW' if r == 'RAW' else 'STRUCTURED'}('{self.class_name}')"
        else:
            text = _SQL.get(r, r)
        return text if self.nullable else text + " NOT NULL"


_ARROW = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INTEGER": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
    "TIME_WITHOUT_TIME_ZONE": pa.time64("ns"), "CHAR": pa.string(), "VARCHAR": pa.string(),
    "BINARY": pa.binary(), "VARBINARY": pa.binary(),
    "INTERVAL_YEAR_MONTH": pa.int32(),  # months
    "INTERVAL_DAY_TIME": pa.int64(),  # milliseconds
    "NULL": pa.null(),
}
_SQL = {"INTEGER": "INT"}


def _interval(resolution: str, fields: dict) -> str:
    """An interval's resolution as SQL spells it, with the precisions of its first and last parts."""
    precisions = {"YEAR": fields.get("yearPrecision"), "DAY": fields.get("dayPrecision"),
                  "SECOND": fields.get("fractionalPrecision")}
    parts = resolution.split("_TO_")

    def part(name: str) -> str:
        p = precisions.get(name)
        return f"{name}({p})" if p is not None else name
    return " TO ".join([part(parts[0])] + ([part(parts[-1])] if len(parts) > 1 else []))


def _unit(precision: int) -> str:
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def logical_type(obj) -> SqlType:
    """The :class:`SqlType` of a deserialized `org.apache.flink.table.types.logical.*` object."""
    if not isinstance(obj, JavaObject) or not isinstance(obj.get("typeRoot"), JavaEnum):
        raise UnsupportedFlinkFeature(f"not a Flink LogicalType: {getattr(obj, 'cls', type(obj).__name__)}")
    root = obj["typeRoot"].name
    nullable = bool(obj.get("isNullable", True))
    f = obj.fields
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return SqlType(root, nullable, length=f["length"])
    if root == "DECIMAL":
        return SqlType(root, nullable, precision=f["precision"], scale=f["scale"])
    if root in ("TIME_WITHOUT_TIME_ZONE", "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
                "TIMESTAMP_WITH_TIME_ZONE"):
        if root == "TIMESTAMP_WITH_TIME_ZONE":
            raise UnsupportedFlinkFeature("TIMESTAMP WITH TIME ZONE is not a type Flink stores")
        return SqlType(root, nullable, precision=f["precision"])
    if root in ("INTERVAL_YEAR_MONTH", "INTERVAL_DAY_TIME"):
        resolution = f["resolution"].name if isinstance(f.get("resolution"), JavaEnum) else ""
        return SqlType(root, nullable, resolution=_interval(resolution, f))
    if root in ("ARRAY", "MULTISET"):
        return SqlType(root, nullable, children=(logical_type(f["elementType"]),))
    if root == "MAP":
        return SqlType(root, nullable, children=(logical_type(f["keyType"]), logical_type(f["valueType"])))
    if root == "ROW":
        fields = java_list(f["fields"])
        return SqlType(root, nullable, children=tuple(logical_type(x["type"]) for x in fields),
                       names=tuple(str(x["name"]) for x in fields))
    if root == "DISTINCT_TYPE":
        return logical_type(f["sourceType"])
    if root == "RAW":
        clazz = f.get("clazz")
        return SqlType(root, nullable, class_name=clazz.name if isinstance(clazz, JavaClass) else None)
    if root == "STRUCTURED_TYPE":  # held as a row of its attributes
        clazz = f.get("implementationClass")
        attributes = java_list(f.get("attributes"))
        return SqlType(root, nullable, class_name=clazz.name if isinstance(clazz, JavaClass) else f.get("className"),
                       children=tuple(logical_type(a["type"]) for a in attributes),
                       names=tuple(str(a["name"]) for a in attributes))
    if root in _ARROW:
        return SqlType(root, nullable)
    raise UnsupportedFlinkFeature(f"SQL type {root} is not supported")
