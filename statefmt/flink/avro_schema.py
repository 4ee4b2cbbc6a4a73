"""flink-avro's `AvroSerializerSnapshot` and the writer schema it holds, to a decodable type.

The snapshot's payload by version (flink-avro):
  1: `writeUTF` schema JSON
  2: `writeUTF` runtime class name, `writeUTF` schema JSON
  3: runtime class name, schema JSON, each as Flink's `StringValue` (no 64 KB limit)

The schema JSON (stdlib `json`) becomes :mod:`.types.avro` decoders: record -> struct,
enum -> string (the symbol), array -> list, map -> map<string, ...>, fixed and bytes ->
binary, ``["null", T]`` -> nullable T, other unions -> a struct of their non-null branches;
logical types date, time-millis/micros, timestamp-millis/micros/nanos (UTC),
local-timestamp-* (no zone), decimal (precision 1..38) and uuid (a string). A schema
statectl cannot map (not JSON, a recursive record, a name it does not know) leaves the
value as its raw bytes, the reason beside it.
"""

from __future__ import annotations

import json

import pyarrow as pa

from ..errors import UnsupportedFlinkFeature
from .binary import Reader
from . import types as T
from .types.avro import SERIALIZER, AvroDecimal, AvroEnum, AvroFixed, AvroLogical, AvroNull, AvroString
from .types.avro_composite import Avro, AvroArray, AvroMap, AvroRecord, AvroUnion

MAX_DEPTH = 64

_PRIMITIVES = {
    "null": AvroNull(),
    "boolean": T.Scalar("boolean", SERIALIZER),
    "int": T.Scalar("int", SERIALIZER),
    "long": T.Scalar("long", SERIALIZER),
    "float": T.Scalar("float", SERIALIZER),
    "double": T.Scalar("double", SERIALIZER),
    "bytes": AvroString(binary=True),
    "string": AvroString(),
}

# logical type -> (underlying primitive, Arrow type)
_LOGICAL = {
    "date": ("int", pa.date32()),
    "time-millis": ("int", pa.time32("ms")),
    "time-micros": ("long", pa.time64("us")),
    "timestamp-millis": ("long", pa.timestamp("ms", tz="UTC")),
    "timestamp-micros": ("long", pa.timestamp("us", tz="UTC")),
    "timestamp-nanos": ("long", pa.timestamp("ns", tz="UTC")),
    "local-timestamp-millis": ("long", pa.timestamp("ms")),
    "local-timestamp-micros": ("long", pa.timestamp("us")),
    "local-timestamp-nanos": ("long", pa.timestamp("ns")),
}


class SchemaError(Exception):
    pass


def read_avro_snapshot(r: Reader, version: int) -> T.FlinkType:
    """The payload of an AvroSerializerSnapshot of *version* to the type of its values."""
    at = r.pos
    if version == 1:
        runtime, schema = "", r.utf()
    elif version == 2:
        runtime, schema = r.utf(), r.utf()
    elif version == 3:
        runtime, schema = r.string_value(), r.string_value()
        if runtime is None or schema is None:
            raise r.error("AvroSerializerSnapshot without a class name or schema", at)
    else:
        raise UnsupportedFlinkFeature(f"{r.source}: AvroSerializerSnapshot version {version} at offset "
                                      f"{r.base + at} is not supported (1 to 3)")
    return avro_type(schema, runtime)


def avro_type(schema: str, runtime_class: str = "") -> T.FlinkType:
    """The decodable type of the values a writer *schema* (JSON) describes, else Opaque."""
    try:
        doc = json.loads(schema)
        root = _Schema().build(doc, "", 0)
    except (ValueError, SchemaError, RecursionError) as e:
        why = f"Avro schema: {e}" if isinstance(e, SchemaError) else "Avro schema is not valid JSON"
        return T.Opaque(SERIALIZER, why)
    return Avro(root, getattr(root, "name", None) or root.describe(), runtime_class or "")


def _full_name(name, namespace: str) -> str:
    if not isinstance(name, str) or not name:
        raise SchemaError(f"a named type without a name: {name!r}")
    return name if "." in name or not namespace else f"{namespace}.{name}"


class _Schema:
    """Builds decoders from a parsed schema; named types are kept by full name."""

    def __init__(self):
        self.named: dict[str, T.FlinkType | None] = {}  # None: being built (a reference is recursion)

    def build(self, s, namespace: str, depth: int) -> T.FlinkType:
        if depth > MAX_DEPTH:
            raise SchemaError(f"nested deeper than {MAX_DEPTH}")
        if isinstance(s, str):
            return self._reference(s, namespace)
        if isinstance(s, list):
            return self._union(s, namespace, depth)
        if not isinstance(s, dict):
            raise SchemaError(f"not a schema: {s!r}")
        kind = s.get("type")
        if isinstance(kind, (dict, list)):  # {"type": {...}} wraps a schema
            return self.build(kind, namespace, depth + 1)
        logical = s.get("logicalType")
        if kind in _PRIMITIVES:
            return self._logical(s, kind, logical) if logical else _PRIMITIVES[kind]
        if kind == "record" or kind == "error":
            return self._record(s, namespace, depth)
        if kind == "enum":
            symbols = s.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(x, str) for x in symbols):
                raise SchemaError(f"enum {s.get('name')!r} without a list of symbols")
            return self._define(s, namespace, lambda full: AvroEnum(full, tuple(symbols)))
        if kind == "fixed":
            size = s.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise SchemaError(f"fixed {s.get('name')!r} with size {size!r}")
            t = self._define(s, namespace, lambda full: AvroFixed(full, size))
            return self._logical(s, "fixed", logical, t) if logical else t
        if kind == "array":
            return AvroArray(self.build(s.get("items"), namespace, depth + 1))
        if kind == "map":
            return AvroMap(self.build(s.get("values"), namespace, depth + 1))
        if isinstance(kind, str):
            return self._reference(kind, namespace)
        raise SchemaError(f"unknown type {kind!r}")

    def _reference(self, name: str, namespace: str) -> T.FlinkType:
        if name in _PRIMITIVES:
            return _PRIMITIVES[name]
        for full in (_full_name(name, namespace), name):
            if full in self.named:
                t = self.named[full]
                if t is None:
                    raise SchemaError(f"record {full} contains itself (a recursive type has no column type)")
                return t
        raise SchemaError(f"unknown type {name!r}")

    def _define(self, s: dict, namespace: str, make) -> T.FlinkType:
        full = _full_name(s.get("name"), s.get("namespace") or namespace)
        if self.named.get(full) is not None:
            raise SchemaError(f"type {full} defined twice")
        t = self.named[full] = make(full)
        return t

    def _record(self, s: dict, namespace: str, depth: int) -> T.FlinkType:
        full = _full_name(s.get("name"), s.get("namespace") or namespace)
        if full in self.named:
            raise SchemaError(f"type {full} defined twice")
        self.named[full] = None
        inner_ns = full.rsplit(".", 1)[0] if "." in full else ""
        fields, seen = [], set()
        for f in s.get("fields") if isinstance(s.get("fields"), list) else _bad_fields(full):
            name = f.get("name") if isinstance(f, dict) else None
            if not isinstance(name, str) or name in seen:
                raise SchemaError(f"record {full} has a field without a name, or a name twice: {name!r}")
            seen.add(name)
            fields.append((name, self.build(f.get("type"), inner_ns, depth + 1)))
        t = self.named[full] = AvroRecord(full, tuple(fields))
        return t

    def _union(self, branches: list, namespace: str, depth: int) -> T.FlinkType:
        if not branches:
            raise SchemaError("an empty union")
        built, names = [], set()
        for b in branches:
            t = self.build(b, namespace, depth + 1)
            name = _branch_name(t)
            if name in names and isinstance(t, (AvroRecord, AvroEnum, AvroFixed)):
                name = t.name  # two named types of one short name: the full name tells them apart
            if name in names:
                raise SchemaError(f"a union with two branches of type {name}")
            names.add(name)
            built.append((name, t))
        return AvroUnion(tuple(built))

    def _logical(self, s: dict, kind: str, logical, t: T.FlinkType | None = None) -> T.FlinkType:
        base = t if t is not None else _PRIMITIVES[kind]
        if logical == "decimal" and kind in ("bytes", "fixed"):
            p, sc = s.get("precision"), s.get("scale", 0)
            if isinstance(p, int) and isinstance(sc, int) and 1 <= p <= 38 and 0 <= sc <= p \
                    and (kind == "bytes" or 1 <= base.width <= 16):
                return AvroDecimal(base, p, sc)
            return base  # a decimal Arrow cannot hold: its bytes
        if logical in _LOGICAL and _LOGICAL[logical][0] == kind:
            return AvroLogical(base, logical, _LOGICAL[logical][1])
        return base  # uuid on a string, or a logical type Avro itself would ignore


def _bad_fields(full: str):
    raise SchemaError(f"record {full} without a list of fields")


def _branch_name(t: T.FlinkType) -> str:
    """A union branch's field name: its type's name (a named type's short name)."""
    if isinstance(t, (AvroRecord, AvroEnum, AvroFixed)):
        return t.name.rsplit(".", 1)[-1]
    if isinstance(t, AvroDecimal):
        return _branch_name(t.inner)
    if isinstance(t, AvroLogical):
        return _branch_name(t.inner)
    if isinstance(t, AvroArray):
        return "array"
    if isinstance(t, AvroMap):
        return "map"
    return t.describe()
