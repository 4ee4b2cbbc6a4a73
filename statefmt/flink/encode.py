"""Arrow columns to Flink's value bytes: the inverse of the column decoders in :mod:`types`.

:func:`encode` turns a column into one binary value per row, as the type's Flink
serializer writes it. Fixed-width values are numpy byte matrices; composite
values join their parts' bytes row by row (:func:`join_rows`), and collections
group their elements' bytes by the list offsets, all without a per-value loop.
Only strings with non-ASCII characters, BigInteger and BigDecimal are encoded
value by value.

A null where the serializer cannot write one (a Long, a Tuple field, a list
element) is one :class:`FlinkEncodeError` naming the place.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bytecolumns import (big_endian, binary, fixed, flat, flat_elements, group_rows, join_rows, parts_of, slices,
                           spread, struct_fields, varints)
from ..errors import FlinkEncodeError
from . import types as T
from .avro_encode import encode_avro
from .rowdata_encode import ENCODERS as ROWDATA_ENCODERS
from .types.avro_composite import Avro
from .types.kryo import NOT_FIXED

LONG_MIN = T.LONG_MIN
INT_MIN = -(1 << 31)


# --- checks --------------------------------------------------------------------------------

def _no_nulls(values: pa.Array, t: T.FlinkType, where: str) -> None:
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise FlinkEncodeError(f"{where}: row {row} is null, which a Flink {t.describe()} "
                               "cannot hold here")


def _numbers(values: pa.Array, target: pa.DataType, t: T.FlinkType, where: str) -> np.ndarray:
    _no_nulls(values, t, where)
    if values.type != target:
        try:
            values = values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise FlinkEncodeError(f"{where}: a {values.type} column does not fit a Flink "
                                   f"{t.describe()} ({str(e).splitlines()[0]})") from None
    return values.to_numpy(zero_copy_only=False)


# --- the encoders --------------------------------------------------------------------------

_SCALAR_DTYPES = {"long": (pa.int64(), ">i8"), "int": (pa.int32(), ">i4"), "short": (pa.int16(), ">i2"),
                  "byte": (pa.int8(), "i1"), "double": (pa.float64(), ">f8"), "float": (pa.float32(), ">f4")}


def encode(t: T.FlinkType, values, where: str = "value") -> pa.Array:
    """Each row of *values* as *t*'s serializer writes it, as a binary column."""
    values = flat(values)
    encoder = _ENCODERS.get(type(t))
    if encoder is None:
        raise FlinkEncodeError(f"{where}: values of {t.describe()} cannot be written")
    return encoder(t, values, where)


def _scalar(t: T.Scalar, values, where):
    if t.kind == "boolean":
        v = _numbers(values, pa.bool_(), t, where)
        return fixed(v.astype(np.uint8).reshape(-1, 1))
    arrow, dtype = _SCALAR_DTYPES[t.kind]
    return fixed(big_endian(_numbers(values, arrow, t, where), dtype))


def _char(t, values, where):
    _no_nulls(values, t, where)
    if not len(values):
        return binary(b"", np.zeros(1))
    lengths = pc.utf8_length(values.cast(pa.string())).to_numpy(zero_copy_only=False)
    text = "".join(values.to_pylist())
    units = np.frombuffer(text.encode("utf-16-be", "surrogatepass"), dtype=">u2")
    if (lengths != 1).any() or len(units) != len(values):
        raise FlinkEncodeError(f"{where}: a Flink Character holds one UTF-16 unit; "
                               f"row {int(np.flatnonzero(lengths != 1)[0]) if (lengths != 1).any() else 0} does not")
    return fixed(units.view(np.uint8).reshape(-1, 2))


def string_values(values: pa.Array) -> pa.Array:
    """Flink's `StringValue` encoding: varint(length + 1), 0 for null, then one varint per UTF-16 unit.

    ASCII strings are their bytes after the length; others are encoded one by one.
    """
    values = values.cast(pa.string())
    n = len(values)
    if not n:
        return pa.array([], pa.binary())
    null = values.is_null().to_numpy(zero_copy_only=False)
    ascii_ = pc.fill_null(pc.string_is_ascii(values), True).to_numpy(zero_copy_only=False)
    lengths = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    heads = varints(np.where(null, 0, lengths + 1))
    bodies = pc.fill_null(values, "").cast(pa.binary())
    if not ascii_.all():
        body_list = bodies.to_pylist()
        heads_list = heads.to_pylist()
        for i in np.flatnonzero(~ascii_).tolist():
            units = np.frombuffer(values[i].as_py().encode("utf-16-le", "surrogatepass"), dtype="<u2")
            heads_list[i] = varints(np.array([len(units) + 1])).to_pylist()[0]
            body_list[i] = b"".join(varints(units).to_pylist())
        heads, bodies = pa.array(heads_list, pa.binary()), pa.array(body_list, pa.binary())
    return join_rows([heads, bodies])


def _string(t, values, where):
    return string_values(values)


def _bytes(t, values, where):
    _no_nulls(values, t, where)
    values = values.cast(pa.binary())
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
    return join_rows([fixed(big_endian(lengths, ">i4")), values])


def _primitive_array(t: T.PrimitiveArray, values, where):
    _no_nulls(values, t, where)
    (flat_values,), offsets = flat_elements(values, [values.values])
    elements = encode(t.element, flat_values, f"{where} element")
    counts = fixed(big_endian(np.diff(offsets), ">i4"))
    return join_rows([counts, group_rows(elements, offsets)])


def _list(t: T.List, values, where):
    if t.serializer.endswith("StringArraySerializer"):
        raise FlinkEncodeError(f"{where}: String[] values cannot be written")
    return _primitive_array(t, values, where)


def _map(t: T.Map, values, where):
    _no_nulls(values, t, where)
    (keys, items), offsets = flat_elements(values, [values.keys, values.items])
    entries = map_entries(t, keys, items, where)
    counts = fixed(big_endian(np.diff(offsets), ">i4"))
    return join_rows([counts, group_rows(entries, offsets)])


def null_flagged(t: T.FlinkType, values: pa.Array, where: str) -> pa.Array:
    """bool isNull, then the value when not null (map values, POJO fields, Nullable)."""
    values = flat(values)
    null = values.is_null().to_numpy(zero_copy_only=False)
    flags = fixed(null.astype(np.uint8).reshape(-1, 1))
    if not null.any():
        return join_rows([flags, encode(t, values, where)])
    encoded = encode(t, values.filter(pa.array(~null)), where)
    return join_rows([flags, binary(*spread(encoded, ~null))])


def map_entries(t: T.Map, keys: pa.Array, items: pa.Array, where: str) -> pa.Array:
    """Map entries as MapSerializer writes each: key, bool isNull, value."""
    return join_rows([encode(t.key, keys, f"{where} map key"), null_flagged(t.value, items, f"{where} map value")])


def _fields(values: pa.Array, names: list[str], t, where: str) -> list[pa.Array]:
    return struct_fields(values, names, t.describe(), where)


def _tuple(t: T.Tuple, values, where):
    _no_nulls(values, t, where)
    fields = _fields(values, t.names, t, where)
    return join_rows([encode(f, v, f"{where}.{n}") for f, v, n in zip(t.fields, fields, t.names)])


def _pojo(t: T.Pojo, values, where):
    names = [n for n, _ in t.fields]
    null = values.is_null().to_numpy(zero_copy_only=False)
    flags = fixed(np.where(null, T.POJO_NULL, T.POJO_NO_SUBCLASS).astype(np.uint8).reshape(-1, 1))
    if not names:
        return flags
    fields = _fields(values, names, t, where)
    body = join_rows([null_flagged(f, v, f"{where}.{n}") for (n, f), v in zip(t.fields, fields)])
    if null.any():
        data, offsets = parts_of(body)
        keep = np.diff(offsets) * ~null
        body = slices(data, offsets[:-1], offsets[:-1] + keep)
    return join_rows([flags, body])


def _row(t: T.Row, values, where):
    _no_nulls(values, t, where)
    names = [n for n, _ in t.fields]
    fields = _fields(values, names, t, where)
    n_bits = len(names) + t.kind_bits
    n_bytes = (n_bits + 7) // 8
    bits = np.zeros((len(values), n_bytes * 8), dtype=bool)
    for i, v in enumerate(fields):
        bits[:, t.kind_bits + i] = v.is_null().to_numpy(zero_copy_only=False)
    mask = np.packbits(bits, axis=1, bitorder="big")
    parts = [fixed(mask)]
    for (n, f), v in zip(t.fields, fields):
        valid = ~v.is_null().to_numpy(zero_copy_only=False)
        if valid.all():
            parts.append(encode(f, v, f"{where}.{n}"))
        else:
            enc = encode(f, v.filter(pa.array(valid)), f"{where}.{n}")
            parts.append(binary(*spread(enc, valid)))
    return join_rows(parts)


def _nullable(t: T.Nullable, values, where):
    if not t.padding:
        return null_flagged(t.inner, values, where)
    null = values.is_null().to_numpy(zero_copy_only=False)
    flagged = null_flagged(t.inner, values, where)
    pad = binary(np.zeros(int(null.sum()) * t.padding, dtype=np.uint8),
                 np.concatenate([[0], np.cumsum(null * t.padding)]))
    return join_rows([flagged, pad])


def _ttl(t: T.Ttl, values, where):
    ts, value = _fields(values, [T.TTL_FIELD, "value"], t, where)
    return join_rows([fixed(big_endian(_numbers(ts, pa.int64(), t, f"{where} TTL timestamp"), ">i8")),
                      encode(t.inner, value, where)])


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _seconds(values: pa.Array, t, where) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epoch seconds, nanoseconds of the second, null mask) of a timestamp, date or epoch-ms column,
    in the column's own unit (no cast that could overflow)."""
    null = values.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_timestamp(values.type):
        unit = values.type.unit
        raw = values.cast(pa.int64())
    elif pa.types.is_date(values.type):
        unit, raw = "s", pc.multiply(values.cast(pa.date32()).cast(pa.int32()).cast(pa.int64()), 86_400)
    elif pa.types.is_integer(values.type):
        unit, raw = "ms", values.cast(pa.int64())
    else:
        raise FlinkEncodeError(f"{where}: a {values.type} column does not fit a Flink {t.describe()}")
    per = _PER_SECOND[unit]
    seconds, rest = np.divmod(pc.fill_null(raw, 0).to_numpy(zero_copy_only=False).astype(np.int64), per)
    return seconds, rest * (1_000_000_000 // per), null


def _epoch(t: T.Epoch, values, where):
    seconds, nanos, null = _seconds(values, t, where)
    return fixed(big_endian(np.where(null, LONG_MIN, seconds * 1000 + nanos // 1_000_000), ">i8"))


def _seconds_nanos(t: T.SecondsNanos, values, where):
    seconds, nanos, null = _seconds(values, t, where)
    first = seconds * 1000 + nanos // 1_000_000 if t.millis else seconds
    first = np.where(null, LONG_MIN, first)
    return fixed(np.hstack([big_endian(first, ">i8"), big_endian(np.where(null, 0, nanos), ">i4")]))


def _local_date_parts(days: np.ndarray) -> np.ndarray:
    d = days.astype("datetime64[D]")
    years = d.astype("datetime64[Y]")
    months = d.astype("datetime64[M]")
    year = years.astype(np.int64) + 1970
    month = (months - years.astype("datetime64[M]")).astype(np.int64) + 1
    day = (d - months.astype("datetime64[D]")).astype(np.int64) + 1
    return np.hstack([big_endian(year, ">i4"), month.astype(np.uint8).reshape(-1, 1),
                      day.astype(np.uint8).reshape(-1, 1)])


def _local_date(t, values, where):
    null = values.is_null().to_numpy(zero_copy_only=False)
    days = pc.fill_null(values.cast(pa.date32()).cast(pa.int32()), 0).to_numpy(zero_copy_only=False)
    m = _local_date_parts(days)
    if null.any():
        m[null] = np.concatenate([big_endian(np.array([INT_MIN]), ">i4")[0], [0x80, 0x00]])
    return fixed(m)


def _time_parts(nanos: np.ndarray) -> np.ndarray:
    seconds, nano = np.divmod(nanos, 1_000_000_000)
    hour, rest = np.divmod(seconds, 3600)
    minute, second = np.divmod(rest, 60)
    return np.hstack([hour.astype(np.uint8).reshape(-1, 1), minute.astype(np.uint8).reshape(-1, 1),
                      second.astype(np.uint8).reshape(-1, 1), big_endian(nano, ">i4")])


_NULL_TIME = np.array([0x80, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00], dtype=np.uint8)


def _local_time(t, values, where):
    null = values.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_time(values.type):
        nanos = values.cast(pa.time64("ns")).cast(pa.int64())
    else:
        nanos = values.cast(pa.int64())
    m = _time_parts(pc.fill_null(nanos, 0).to_numpy(zero_copy_only=False))
    m[null] = _NULL_TIME
    return fixed(m)


def _local_date_time(t, values, where):
    seconds, nanos_of_second, null = _seconds(values, t, where)
    days, second_of_day = np.divmod(seconds, 86_400)
    nanos = second_of_day * 1_000_000_000 + nanos_of_second
    m = np.hstack([_local_date_parts(days), _time_parts(nanos)])
    if null.any():
        m[null] = np.concatenate([big_endian(np.array([INT_MIN]), ">i4")[0], [0x80, 0x00], _NULL_TIME])
    return fixed(m)


def _big_integer_bytes(v: int | None) -> bytes:
    if v is None:
        return b"\x00\x00\x00\x00"
    special = {0: 1, 1: 2, 10: 3}
    if v in special:
        return special[v].to_bytes(4, "big")
    raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
    return (len(raw) + 4).to_bytes(4, "big") + raw


def _parse_decimal(v, where) -> decimal.Decimal | None:
    if v is None:
        return None
    try:
        return decimal.Decimal(str(v))
    except decimal.InvalidOperation:
        raise FlinkEncodeError(f"{where}: {v!r} is not a number") from None


def _big_integer(t, values, where):
    out = []
    for v in values.to_pylist():
        d = _parse_decimal(v, where)
        if d is not None and d != d.to_integral_value():
            raise FlinkEncodeError(f"{where}: {v!r} is not an integer (a Flink BigInteger)")
        out.append(_big_integer_bytes(None if d is None else int(d)))
    return pa.array(out, pa.binary())


def _big_decimal(t, values, where):
    out = []
    for v in values.to_pylist():
        d = _parse_decimal(v, where)
        if d is None:
            out.append(_big_integer_bytes(None))
            continue
        sign, digits, exponent = d.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        out.append(_big_integer_bytes(unscaled) + (-exponent).to_bytes(4, "big", signed=True))
    return pa.array(out, pa.binary())


def _kryo(t: T.Kryo, values, where):
    if t.plan is None:
        raise FlinkEncodeError(f"{where}: values of {t.describe()} cannot be written: {NOT_FIXED}")
    from .kryo.encode import encode_fixed  # numba's kernels: only for a Kryo value

    return encode_fixed(t.plan, t.type_class, values, t.decoder.config.generation, where)


def _void(t, values, where):
    return fixed(np.zeros((len(values), 1), dtype=np.uint8))


def _time_window(t, values, where):
    _no_nulls(values, t, where)
    start, end = _fields(values, ["start", "end"], t, where)
    return fixed(np.hstack([big_endian(_numbers(start, pa.int64(), t, where), ">i8"),
                            big_endian(_numbers(end, pa.int64(), t, where), ">i8")]))


_ENCODERS = {
    T.Scalar: _scalar, T.Char: _char, T.String: _string, T.Bytes: _bytes,
    T.PrimitiveArray: _primitive_array, T.List: _list, T.Map: _map, T.Tuple: _tuple, T.Pojo: _pojo,
    T.Row: _row, T.Nullable: _nullable, T.Ttl: _ttl, T.Epoch: _epoch, T.SecondsNanos: _seconds_nanos,
    T.LocalDate: _local_date, T.LocalTime: _local_time, T.LocalDateTime: _local_date_time,
    T.BigInteger: _big_integer, T.BigDecimal: _big_decimal, T.VoidNamespace: _void,
    T.TimeWindow: _time_window, T.Kryo: _kryo, Avro: encode_avro, **ROWDATA_ENCODERS,
}
