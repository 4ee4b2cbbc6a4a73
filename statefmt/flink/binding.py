"""Flink type bindings: the spec's words for Flink serializers, and back.

A binding names the serializer a job declares for a key, a state or a
namespace, in Java's spelling: ``Long``, ``String``, ``Tuple2<String, Integer>``,
``List<Long>``, ``Map<String, Long>``, ``long[]``, ``LocalDateTime``... and, as a
mapping, a POJO: ``{pojo: flinkjob.Profile, fields: {hits: Integer, name: String}}``.
:func:`parse_type` reads one, :func:`type_text` writes one (so a savepoint's
own types can be stated again), and :func:`derive_type` names the serializer an
Arrow column type implies where there is only one choice.
"""

from __future__ import annotations

import re

import pyarrow as pa

from ..errors import FlinkEncodeError
from . import serializers as S
from . import types as T
from .rowdata import RowData

_B = S._BASE
_A = S._ARRAY
TUPLE_PACKAGE = "org.apache.flink.api.java.tuple."


def _simple(name: str) -> T.FlinkType:
    return S.SIMPLE[name]


NAMED: dict[str, T.FlinkType] = {
    "Long": T.Scalar("long", _B + "LongSerializer"),
    "Integer": T.Scalar("int", _B + "IntSerializer"),
    "Short": T.Scalar("short", _B + "ShortSerializer"),
    "Byte": T.Scalar("byte", _B + "ByteSerializer"),
    "Double": T.Scalar("double", _B + "DoubleSerializer"),
    "Float": T.Scalar("float", _B + "FloatSerializer"),
    "Boolean": T.Scalar("boolean", _B + "BooleanSerializer"),
    "Character": T.Char(_B + "CharSerializer"),
    "String": T.String(_B + "StringSerializer"),
    "byte[]": T.Bytes(_A + "BytePrimitiveArraySerializer"),
    "BigInteger": T.BigInteger(_B + "BigIntSerializer"),
    "BigDecimal": T.BigDecimal(_B + "BigDecSerializer"),
    "Date": T.Epoch(_B + "DateSerializer"),
    "java.sql.Date": T.Epoch(_B + "SqlDateSerializer"),
    "java.sql.Time": T.Epoch(_B + "SqlTimeSerializer"),
    "java.sql.Timestamp": T.SecondsNanos(True, _B + "SqlTimestampSerializer"),
    "Instant": T.SecondsNanos(False, _B + "InstantSerializer"),
    "LocalDate": T.LocalDate(_B + "LocalDateSerializer"),
    "LocalTime": T.LocalTime(_B + "LocalTimeSerializer"),
    "LocalDateTime": T.LocalDateTime(_B + "LocalDateTimeSerializer"),
    "VoidNamespace": T.VoidNamespace("org.apache.flink.runtime.state.VoidNamespaceSerializer"),
    "TimeWindow": T.TimeWindow("org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer"),
}
for _java, _kind in [("long", "Long"), ("int", "Int"), ("short", "Short"), ("double", "Double"),
                     ("float", "Float"), ("boolean", "Boolean"), ("char", "Char")]:
    NAMED[f"{_java}[]"] = _simple(f"{_A}{_kind}PrimitiveArraySerializer${_kind}PrimitiveArraySerializerSnapshot")
_TEXT_OF = {t: name for name, t in NAMED.items()}
LIST_SERIALIZER = S.LIST_SERIALIZER
MAP_SERIALIZER = S.MAP_SERIALIZER
TUPLE_SERIALIZER = S._J + "TupleSerializer"
POJO_SERIALIZER = S._J + "PojoSerializer"
NULLABLE_SERIALIZER = S._J + "NullableSerializer"
VOID = NAMED["VoidNamespace"]
LONG = NAMED["Long"]


def parse_type(spec, where: str) -> T.FlinkType:
    """The serializer a binding names (a type string, or a POJO mapping)."""
    if isinstance(spec, dict):
        return _pojo(spec, where)
    if not isinstance(spec, str):
        raise FlinkEncodeError(f"{where} must be a Flink type such as Long or Tuple2<String, Long>, "
                               f"got {type(spec).__name__}")
    tokens = re.findall(r"[A-Za-z_$][\w.$]*(?:\[\])?|[<>,]|\S", spec)
    t, rest = _parse(tokens, spec, where)
    if rest:
        raise FlinkEncodeError(f"{where}: unexpected {rest[0]!r} in Flink type {spec!r}")
    return t


def _parse(tokens: list[str], text: str, where: str) -> tuple[T.FlinkType, list[str]]:
    if not tokens:
        raise FlinkEncodeError(f"{where}: Flink type {text!r} ends early")
    name, rest = tokens[0], tokens[1:]
    if name in NAMED:
        return NAMED[name], rest
    args: list[T.FlinkType] = []
    if rest and rest[0] == "<":
        rest = rest[1:]
        while True:
            arg, rest = _parse(rest, text, where)
            args.append(arg)
            if not rest:
                raise FlinkEncodeError(f"{where}: Flink type {text!r} ends early (a '>' is missing)")
            sep, rest = rest[0], rest[1:]
            if sep == ">":
                break
            if sep != ",":
                raise FlinkEncodeError(f"{where}: unexpected {sep!r} in Flink type {text!r}")
    return _generic(name, args, text, where), rest


def _generic(name: str, args: list[T.FlinkType], text: str, where: str) -> T.FlinkType:
    def arity(n: int):
        if len(args) != n:
            raise FlinkEncodeError(f"{where}: {name} takes {n} type argument(s) in {text!r}, got {len(args)}")
    m = re.fullmatch(r"Tuple(\d+)", name)
    if m and 1 <= int(m.group(1)) <= 25:
        arity(int(m.group(1)))
        return T.Tuple(TUPLE_PACKAGE + name, tuple(args), TUPLE_SERIALIZER)
    if name == "List":
        arity(1)
        return T.List(args[0], LIST_SERIALIZER)
    if name == "Map":
        arity(2)
        return T.Map(args[0], args[1], MAP_SERIALIZER)
    if name == "Nullable":
        arity(1)
        return T.Nullable(args[0], 0, NULLABLE_SERIALIZER)
    known = ", ".join(sorted(n for n in NAMED if "[" not in n and "." not in n))
    raise FlinkEncodeError(f"{where}: unknown Flink type {name!r} in {text!r}; known: {known}, "
                           "TupleN<...>, List<...>, Map<..., ...>, Nullable<...>, a primitive array "
                           "(long[]...), or {pojo: class, fields: {...}}")


def _pojo(spec: dict, where: str) -> T.Pojo:
    unknown = sorted(set(spec) - {"pojo", "fields"})
    if unknown or not isinstance(spec.get("pojo"), str) or not isinstance(spec.get("fields"), dict):
        raise FlinkEncodeError(f"{where}: a POJO is {{pojo: <class>, fields: {{<name>: <type>, ...}}}}"
                               + (f"; unknown field(s) {', '.join(unknown)}" if unknown else ""))
    fields = tuple((str(n), parse_type(t, f"{where}.fields.{n}")) for n, t in sorted(spec["fields"].items()))
    return T.Pojo(spec["pojo"], fields, (), POJO_SERIALIZER)


def type_text(t: T.FlinkType):
    """The binding that names *t* (a string, or a mapping for a POJO)."""
    if t in _TEXT_OF:
        return _TEXT_OF[t]
    if isinstance(t, T.Tuple):
        return f"{t.tuple_class.rsplit('.', 1)[-1]}<{', '.join(_inner_text(f, t) for f in t.fields)}>"
    if isinstance(t, T.List) and t.serializer == LIST_SERIALIZER:
        return f"List<{_inner_text(t.element, t)}>"
    if isinstance(t, T.Map):
        return f"Map<{_inner_text(t.key, t)}, {_inner_text(t.value, t)}>"
    if isinstance(t, T.Nullable) and not t.padding:
        return f"Nullable<{_inner_text(t.inner, t)}>"
    if isinstance(t, T.Pojo) and not t.subclasses:
        return {"pojo": t.pojo_class, "fields": {n: type_text(f) for n, f in t.fields}}
    raise FlinkEncodeError(f"{t.describe()} ({t.serializer or 'no serializer'}) has no Flink type binding")


def _inner_text(t: T.FlinkType, outer: T.FlinkType) -> str:
    """*t*'s binding text inside *outer*'s: a POJO (a mapping) has none there."""
    text = type_text(t)
    if not isinstance(text, str):
        raise FlinkEncodeError(f"{outer.describe()} ({outer.serializer or 'no serializer'}) has no Flink type "
                               f"binding: it holds a POJO {t.describe()}")
    return text


_DERIVED = {pa.int64(): "Long", pa.int32(): "Integer", pa.int16(): "Short", pa.int8(): "Byte",
            pa.float64(): "Double", pa.float32(): "Float", pa.bool_(): "Boolean", pa.string(): "String",
            pa.large_string(): "String", pa.binary(): "byte[]", pa.large_binary(): "byte[]"}


def derive_type(t: pa.DataType, where: str) -> T.FlinkType:
    """The serializer an Arrow type implies: int64 Long, string String, list List, map Map,
    a struct of f0..fN a TupleN. Dates, timestamps and other structs have several Java
    types; their binding must be given."""
    if t in _DERIVED:
        return NAMED[_DERIVED[t]]
    if pa.types.is_decimal(t):
        return NAMED["BigDecimal"]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return T.List(derive_type(t.value_type, where), LIST_SERIALIZER)
    if pa.types.is_map(t):
        return T.Map(derive_type(t.key_type, where), derive_type(t.item_type, where), MAP_SERIALIZER)
    if pa.types.is_struct(t) and t.num_fields and \
            [t.field(i).name for i in range(t.num_fields)] == [f"f{i}" for i in range(t.num_fields)] \
            and t.num_fields <= 25:
        fields = tuple(derive_type(t.field(i).type, where) for i in range(t.num_fields))
        return T.Tuple(f"{TUPLE_PACKAGE}Tuple{t.num_fields}", fields, TUPLE_SERIALIZER)
    hint = {"date32[day]": "LocalDate, Date or java.sql.Date"}.get(str(t))
    if pa.types.is_timestamp(t):
        hint = "Instant, LocalDateTime or java.sql.Timestamp"
    elif pa.types.is_struct(t):
        hint = "a POJO {pojo: class, fields: {...}} or TupleN<...> with fields f0, f1, ..."
    raise FlinkEncodeError(f"{where}: a {t} column has no single Flink type; give its flink type"
                           + (f" ({hint})" if hint else ""))


# a number column written as a Flink type whose Arrow type is one of these loses nothing
_WIDENINGS = {pa.int8(): (pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()),
              pa.int16(): (pa.int32(), pa.int64(), pa.float32(), pa.float64()),
              pa.int32(): (pa.int64(), pa.float64()), pa.float32(): (pa.float64(),)}


def check_written_type(column: pa.DataType, declared: T.FlinkType, where: str) -> None:
    """A column is written as the *declared* Flink type when it has that type's Arrow type or one
    that widens to it without loss (Integer -> Long, Float -> Double...); a narrowing or another
    conversion of a number or boolean is one line naming both types (a cast in the input's SQL
    says it on purpose). Text is parsed by the encoders (a value that does not parse fails the
    write), and types beyond these are left to them too."""
    numeric = pa.types.is_integer(column) or pa.types.is_floating(column)
    if not (numeric or pa.types.is_boolean(column)) or not isinstance(declared, (T.Scalar, T.String)):
        return
    target = declared.arrow()
    if column == target or target in _WIDENINGS.get(column, ()):
        return
    why = "a narrowing" if numeric and (pa.types.is_integer(target) or pa.types.is_floating(target)) \
        else "not a safe widening"
    raise FlinkEncodeError(f"{where}: {_DERIVED[column]} values cannot be written as {type_text(declared)} "
                           f"({why}); declare {_DERIVED[column]} or cast it in the input's SQL")


def key_java_type(t: T.FlinkType, where: str):
    """The Java type :mod:`keyhash` hashes a key of *t* as (None for a SQL operator's key row,
    placed by the hash of its bytes: :mod:`rowdata_keys`); POJO, Row and other keys are refused."""
    from .model import java_key_type
    from ..errors import KeyTypeError
    if isinstance(t, RowData):
        return None
    try:
        return java_key_type(t, where)
    except KeyTypeError:
        raise FlinkEncodeError(
            f"{where}: a {t.describe()} key cannot be written: Flink places keys by their Java "
            "hashCode, which is known here only for String, Long, Integer, Short, Byte, Boolean, "
            "Character, Double, Float and tuples of these") from None
