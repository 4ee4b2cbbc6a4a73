"""Logical types of state columns, as written in `_metadata`.

A type is plain JSON so that `_metadata` stays readable and `statectl info`
never needs pyarrow: a primitive is a string (``"int64"``), a parameterised or
nested type a one-key object (``{"list": "string"}``). `docs/FORMAT.md` lists
the grammar. Conversions to Arrow and Spark live here too, imported lazily.
"""

from __future__ import annotations

from typing import Any

from .errors import MetadataError, UsageError

DataType = Any  # str | dict: the JSON form described above

PRIMITIVES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "float32",
    "float64",
    "string",
    "binary",
    "date32",
)
TIMESTAMP_UNITS = ("us",)
MAX_TYPE_DEPTH = 64  # nesting of list/map/struct; every consumer (Arrow, Spark, rich) stays shallow


def _short(value) -> str:
    import reprlib

    short = reprlib.Repr()  # keyword arguments only from Python 3.12
    short.maxlevel, short.maxstring, short.maxother = 3, 60, 60
    return short.repr(value)


def validate_type(t: DataType, where: str = "type", _depth: int = 0) -> DataType:
    """Check that *t* is a well-formed type, at most MAX_TYPE_DEPTH deep; return it unchanged."""
    if _depth > MAX_TYPE_DEPTH:
        import re

        outer = re.split(r"\.(?:list|map|struct)\b", where)[0]
        raise MetadataError(f"{outer}: type nested deeper than {MAX_TYPE_DEPTH} levels")
    if isinstance(t, str):
        if t not in PRIMITIVES:
            raise MetadataError(f"{where}: unknown type {_short(t)}")
        return t
    if not isinstance(t, dict) or len(t) != 1:
        raise MetadataError(f"{where}: a type is a name or a one-key object, got {_short(t)}")
    (tag, arg), = t.items()
    d = _depth + 1
    if tag == "list":
        validate_type(arg, f"{where}.list", d)
    elif tag == "map":
        _require_keys(arg, ("key", "value"), f"{where}.map")
        validate_type(arg["key"], f"{where}.map.key", d)
        validate_type(arg["value"], f"{where}.map.value", d)
    elif tag == "struct":
        if not isinstance(arg, list) or not arg:
            raise MetadataError(f"{where}.struct: a non-empty list of fields is required")
        names = set()
        for i, field in enumerate(arg):
            _require_keys(field, ("name", "type"), f"{where}.struct[{i}]")
            if not isinstance(field["name"], str) or field["name"] in names:
                raise MetadataError(f"{where}.struct[{i}]: field names must be unique strings")
            names.add(field["name"])
            if not isinstance(field.get("nullable", True), bool):
                raise MetadataError(f"{where}.struct[{i}].nullable must be true or false")
            validate_type(field["type"], f"{where}.struct.{field['name']}", d)
    elif tag == "timestamp":
        _require_keys(arg, ("unit", "tz"), f"{where}.timestamp")
        if arg["unit"] not in TIMESTAMP_UNITS:
            raise MetadataError(f"{where}.timestamp: unit must be one of {TIMESTAMP_UNITS}")
        if arg["tz"] not in (None, "UTC"):
            raise MetadataError(f"{where}.timestamp: tz must be \"UTC\" or null")
    elif tag == "decimal":
        _require_keys(arg, ("precision", "scale"), f"{where}.decimal")
        p, s = arg["precision"], arg["scale"]
        if not (_is_int(p) and _is_int(s) and 1 <= p <= 38 and 0 <= s <= p):
            raise MetadataError(f"{where}.decimal: need 1 <= precision <= 38, 0 <= scale <= precision")
    else:
        raise MetadataError(f"{where}: unknown type {tag!r}")
    return t


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _require_keys(obj: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(obj, dict):
        raise MetadataError(f"{where}: expected an object")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise MetadataError(f"{where}: missing {', '.join(missing)}")


def type_str(t: DataType) -> str:
    """A short human form: ``map<string, list<int64>>``."""
    if isinstance(t, str):
        return t
    (tag, arg), = t.items()
    if tag == "list":
        return f"list<{type_str(arg)}>"
    if tag == "map":
        return f"map<{type_str(arg['key'])}, {type_str(arg['value'])}>"
    if tag == "struct":
        inner = ", ".join(f"{f['name']}: {type_str(f['type'])}" for f in arg)
        return f"struct<{inner}>"
    if tag == "timestamp":
        return f"timestamp[{arg['unit']}, {arg['tz']}]" if arg["tz"] else f"timestamp[{arg['unit']}]"
    if tag == "decimal":
        return f"decimal({arg['precision']}, {arg['scale']})"
    raise MetadataError(f"unknown type {t!r}")


def list_of(element: DataType) -> DataType:
    return {"list": element}


def map_of(key: DataType, value: DataType) -> DataType:
    return {"map": {"key": key, "value": value}}


# --- Arrow ---------------------------------------------------------------

def to_arrow(t: DataType):
    """The pyarrow type for *t*."""
    import pyarrow as pa

    if isinstance(t, str):
        return {
            "bool": pa.bool_(),
            "int8": pa.int8(),
            "int16": pa.int16(),
            "int32": pa.int32(),
            "int64": pa.int64(),
            "float32": pa.float32(),
            "float64": pa.float64(),
            "string": pa.string(),
            "binary": pa.binary(),
            "date32": pa.date32(),
        }[t]
    (tag, arg), = t.items()
    if tag == "list":
        return pa.list_(to_arrow(arg))
    if tag == "map":
        return pa.map_(to_arrow(arg["key"]), to_arrow(arg["value"]))
    if tag == "struct":
        return pa.struct(
            [pa.field(f["name"], to_arrow(f["type"]), f.get("nullable", True)) for f in arg]
        )
    if tag == "timestamp":
        return pa.timestamp(arg["unit"], tz=arg["tz"])
    if tag == "decimal":
        return pa.decimal128(arg["precision"], arg["scale"])
    raise MetadataError(f"unknown type {t!r}")


def from_arrow(at) -> DataType:
    """The logical type for pyarrow type *at*; large variants map to the plain ones."""
    import pyarrow as pa
    import pyarrow.types as pat

    simple = [
        (pat.is_boolean, "bool"),
        (pat.is_int8, "int8"),
        (pat.is_int16, "int16"),
        (pat.is_int32, "int32"),
        (pat.is_int64, "int64"),
        (pat.is_float32, "float32"),
        (pat.is_float64, "float64"),
        (pat.is_string, "string"),
        (pat.is_large_string, "string"),
        (pat.is_binary, "binary"),
        (pat.is_large_binary, "binary"),
        (pat.is_date32, "date32"),
    ]
    for test, name in simple:
        if test(at):
            return name
    if pat.is_map(at):
        return map_of(from_arrow(at.key_type), from_arrow(at.item_type))
    if pat.is_list(at) or pat.is_large_list(at):
        return list_of(from_arrow(at.value_type))
    if pat.is_struct(at):
        return {
            "struct": [
                {"name": f.name, "type": from_arrow(f.type), "nullable": f.nullable}
                for f in at
            ]
        }
    if pat.is_timestamp(at):
        if at.unit != "us" or at.tz not in (None, "UTC", "+00:00", "Etc/UTC"):
            raise UsageError(
                f"unsupported timestamp type {at}: use microseconds (unit 'us') "
                "and time zone UTC or none"
            )
        return {"timestamp": {"unit": "us", "tz": "UTC" if at.tz else None}}
    if pat.is_decimal128(at):
        return {"decimal": {"precision": at.precision, "scale": at.scale}}
    if at == pa.null():
        raise UsageError("a column of only nulls has no type; cast it to the state's type")
    raise UsageError(f"unsupported column type {at}")


# --- Spark (DDL strings; no Spark import needed) --------------------------

def to_spark_ddl(t: DataType) -> str:
    """The Spark SQL type of *t*, as DDL text (``array<bigint>``)."""
    if isinstance(t, str):
        return {
            "bool": "boolean",
            "int8": "tinyint",
            "int16": "smallint",
            "int32": "int",
            "int64": "bigint",
            "float32": "float",
            "float64": "double",
            "string": "string",
            "binary": "binary",
            "date32": "date",
        }[t]
    (tag, arg), = t.items()
    if tag == "list":
        return f"array<{to_spark_ddl(arg)}>"
    if tag == "map":
        return f"map<{to_spark_ddl(arg['key'])}, {to_spark_ddl(arg['value'])}>"
    if tag == "struct":
        fields = ", ".join(
            f"{quote_identifier(f['name'])}: {to_spark_ddl(f['type'])}"
            + ("" if f.get("nullable", True) else " not null")
            for f in arg
        )
        return f"struct<{fields}>"
    if tag == "timestamp":
        return "timestamp" if arg["tz"] else "timestamp_ntz"
    if tag == "decimal":
        return f"decimal({arg['precision']}, {arg['scale']})"
    raise MetadataError(f"unknown type {t!r}")


def quote_identifier(name: str) -> str:
    """A Spark SQL identifier in backquotes, safe for any column name."""
    return "`" + name.replace("`", "``") + "`"
