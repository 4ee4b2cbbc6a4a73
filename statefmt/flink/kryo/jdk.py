"""How Kryo (and, in Flink 1.x, chill) write the JDK's classes: numbers, text, big numbers,
dates and times, UUIDs, Optional, Locale, BitSet, Arrays.asList, the Collections singletons.

Each reader takes the decoder and the value's graph (:mod:`.decode`), and the declared type's
generic arguments where the encoding depends on them. Kryo 5 and Kryo 2 differ in places
(fixed-width byte order, chill's serializers, java.time written field by field under Kryo 2):
each reader says which it reads. (The decoder and graph are :mod:`.decode`'s, named in the
annotations only: this module does not import it.)
"""

from __future__ import annotations

import datetime as dt
from decimal import Context, Decimal

from ...errors import FlinkFormatError
from .classes import kryo_name
from .registry import BOXED, KRYO2, KRYO5
from .stream import KryoDataError, KryoIn

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
NULL = 0


def _since_epoch(**delta) -> dt.datetime:
    """The epoch plus *delta*; a time Python's datetime cannot hold is a damaged value."""
    try:
        return EPOCH + dt.timedelta(**delta)
    except (OverflowError, ValueError):
        raise KryoDataError(f"a time out of range ({delta})") from None


def _char(inp: KryoIn, little: bool) -> str:
    return chr(inp.fixed("H"))


def _big_integer(inp: KryoIn) -> str | None:
    n = inp.varint()
    if n == NULL:
        return None
    return str(int.from_bytes(inp.raw(n - 1), "big", signed=True))


_DECIMALS = Context(prec=100_000, Emin=-(2**31), Emax=2**31)  # a Java BigDecimal's scale is an int


def _big_decimal(inp: KryoIn, little: bool) -> str | None:
    unscaled = _big_integer(inp)
    if unscaled is None:
        return None
    scale = inp.varint(False)
    try:
        return str(Decimal(int(unscaled)).scaleb(-scale, _DECIMALS))
    except ArithmeticError:
        raise KryoDataError(f"a BigDecimal of scale {scale} out of range") from None


SCALARS = {
    "java.lang.String": lambda inp, little: inp.string(),
    "int": lambda inp, little: inp.varint(False), "long": lambda inp, little: inp.varlong(False),
    "boolean": lambda inp, little: inp.byte() != 0, "byte": lambda inp, little: inp.signed_byte(),
    "char": _char, "short": lambda inp, little: inp.fixed("h"),
    "float": lambda inp, little: inp.fixed("f"), "double": lambda inp, little: inp.fixed("d"),
    "java.math.BigInteger": lambda inp, little: _big_integer(inp),
    "java.math.BigDecimal": _big_decimal,
    "java.net.URI": lambda inp, little: inp.string(),
    "java.util.Date": lambda inp, little: _since_epoch(milliseconds=inp.varlong()),
}
for _boxed, _prim in BOXED.items():
    SCALARS[_boxed] = SCALARS[_prim]

# FieldSerializer's primitive fields: ints and longs variable-length, the rest fixed-width.
FIELD_PRIMITIVES = {k: SCALARS[k] for k in ("int", "long", "boolean", "byte", "char", "short", "float", "double")}
ARRAY_ELEMENTS = {"int": lambda inp, little: inp.varint(False), "long": lambda inp, little: inp.varlong(False)}


def _uuid(d, g, generic) -> str:
    import uuid as _u
    if d.config.generation == KRYO5:
        hi, lo = g.inp.fixed("q"), g.inp.fixed("q")
    else:
        hi, lo = g.inp.varlong(False), g.inp.varlong(False)
    return str(_u.UUID(int=((hi & (2**64 - 1)) << 64) | (lo & (2**64 - 1))))


def _optional(d, g, generic):
    content = d._element_type(generic, 0)
    if d.config.generation == KRYO2 and content is not None and d.is_final(content):
        # Kryo 2 writes an Optional field by field, its `value` typed by the declared argument
        return d._object(g, kryo_name(content), content, may_be_null=True)
    return d._class_and_object(g, content)


def _local_date(inp: KryoIn, generation: int = KRYO5) -> dt.date:
    if generation == KRYO2:  # FieldSerializer over LocalDate's fields: day, month (shorts), year (int)
        day, month, year = inp.fixed("h"), inp.fixed("h"), inp.varint(False)
    else:
        year = inp.varint()
        month, day = inp.byte(), inp.byte()
    try:
        return dt.date(year, month, day)
    except ValueError as e:
        raise KryoDataError(f"bad date {year}-{month}-{day}: {e}") from None


def _local_time(inp: KryoIn, generation: int = KRYO5) -> dt.time:
    if generation == KRYO2:  # FieldSerializer over LocalTime's fields: hour, minute, nano, second
        hour, minute = inp.signed_byte(), inp.signed_byte()
        nano, second = inp.varint(False), inp.signed_byte()
        try:
            return dt.time(hour, minute, second, nano // 1000)
        except ValueError as e:
            raise KryoDataError(f"bad time: {e}") from None
    hour = inp.signed_byte()
    minute = second = nano = 0
    if hour < 0:
        hour = ~hour
    else:
        minute = inp.signed_byte()
        if minute < 0:
            minute = ~minute
        else:
            second = inp.signed_byte()
            if second < 0:
                second = ~second
            else:
                nano = inp.varint()
    try:
        return dt.time(hour, minute, second, nano // 1000)
    except ValueError as e:
        raise KryoDataError(f"bad time: {e}") from None


def _instant(d, g, generic) -> dt.datetime:
    if d.config.generation == KRYO2:  # FieldSerializer: nanos (int), seconds (long)
        nanos, seconds = g.inp.varint(False), g.inp.varlong(False)
    else:
        seconds, nanos = g.inp.varlong(), g.inp.varint()
    return _since_epoch(seconds=seconds, microseconds=nanos // 1000)


def _locale(d, g, generic) -> str:
    if d.config.generation == KRYO2:  # chill writes a Locale with Java serialization
        value = _java_serialized(g)
        parts = [str(value.get(f) or "") for f in ("language", "country", "variant")]
    else:
        parts = [g.inp.string() or "", g.inp.string() or "", g.inp.string() or ""]
    return "_".join(p for p in parts if p) if any(parts) else ""


def _bit_set(d, g, generic) -> list[int]:
    n = g.inp.varint()
    d._check_count(g, n)
    words = [g.inp.fixed("q") & (2**64 - 1) for _ in range(n)]
    return [i * 64 + b for i, w in enumerate(words) for b in range(64) if w >> b & 1]


def _local_date_time(d, g, generic) -> dt.datetime:
    if d.config.generation == KRYO2:  # FieldSerializer: date, time, each a final field (a marker first)
        date = d._object(g, "java.time.LocalDate", None, may_be_null=True)
        time = d._object(g, "java.time.LocalTime", None, may_be_null=True)
        if date is None or time is None:
            raise KryoDataError("a LocalDateTime without its date or time")
        return dt.datetime.combine(date, time)
    return dt.datetime.combine(_local_date(g.inp), _local_time(g.inp))


def _java_serialized(g):
    """An object Kryo's JavaSerializer wrote: a Java serialization stream, no length before it."""
    from ..binary import Reader
    from ..javaser import JavaObject, read_java_object

    r = Reader(g.inp.data, "Kryo value", g.inp.pos, g.inp.end)
    try:
        value = read_java_object(r)
    except FlinkFormatError as e:
        raise KryoDataError(f"a Java-serialized object: {e}") from None
    g.inp.pos = r.pos
    if not isinstance(value, JavaObject):
        raise KryoDataError("a Java-serialized value that is not an object")
    return value


def _arrays_as_list(d, g, generic) -> list:
    if d.config.generation == KRYO5:
        return d._collection_kryo5(g, generic, False)
    n = g.inp.varint()  # chill's: a count, the array's component class, then each element with its class
    d._read_class(g)
    return d._elements_kryo2(g, n, None)


def _empty(d, g, generic) -> list:
    return []


def _singleton(d, g, generic) -> list:
    return [d._class_and_object(g, d._element_type(generic, 0))]


def _singleton_map(d, g, generic) -> list:
    key = d._class_and_object(g, None)
    return [{"key": key, "value": d._class_and_object(g, None)}]


def _sql_timestamp(d, g, generic) -> dt.datetime:
    millis = g.inp.varlong()
    nanos = g.inp.varint()
    return _since_epoch(seconds=millis // 1000, microseconds=nanos // 1000)


BUILTINS = {
    "java.util.UUID": _uuid,
    "java.util.Optional": _optional,
    "java.time.LocalDate": lambda d, g, t: _local_date(g.inp, d.config.generation),
    "java.time.LocalTime": lambda d, g, t: _local_time(g.inp, d.config.generation),
    "java.time.LocalDateTime": _local_date_time,
    "java.time.Instant": _instant,
    "java.util.Locale": _locale,
    "java.util.BitSet": _bit_set,
    "java.util.Arrays$ArrayList": _arrays_as_list,
    "java.util.Collections$EmptyList": _empty, "java.util.Collections$EmptySet": _empty,
    "java.util.Collections$EmptyMap": _empty,
    "java.util.Collections$SingletonList": _singleton, "java.util.Collections$SingletonSet": _singleton,
    "java.util.Collections$SingletonMap": _singleton_map,
    "java.sql.Date": lambda d, g, t: _since_epoch(milliseconds=g.inp.varlong()),
    "java.sql.Time": lambda d, g, t: _since_epoch(milliseconds=g.inp.varlong()),
    "java.sql.Timestamp": _sql_timestamp,
}
