"""Flink's key groups, computed without a JVM.

Flink assigns a key to the key group
``MathUtils.murmurHash(key.hashCode()) % maxParallelism``
(``KeyGroupRangeAssignment.assignToKeyGroup``): Java's ``hashCode`` of the key
object, then a 32-bit murmur3 finaliser made non-negative. statectl's own format
hashes keys differently (:mod:`statectl.statefmt.keygroups`); this module is
only for Flink savepoints. Subtask ranges are the same formulas in both worlds:
use :func:`~statectl.statefmt.keygroups.key_group_range` and
:func:`~statectl.statefmt.keygroups.subtask_for_key_group`.

A Python value does not say which Java class it stands for (an ``int`` may be a
Long or an Integer, whose hashes differ), so every function takes a *Java type*:

- a class name: ``"Long"``, ``"Integer"``, ``"Short"``, ``"Byte"``,
  ``"Boolean"``, ``"Character"``, ``"Double"``, ``"Float"``, ``"String"``
  (the primitive names ``"long"``, ``"int"``, ``"char"``... mean the same);
- a Python tuple of Java types for Flink's ``Tuple0`` .. ``Tuple25``, nested
  freely: ``("String", "Integer")`` is ``Tuple2<String, Integer>``.

Two forms: :func:`flink_key_group` for one key, and :func:`flink_key_groups`
for a numpy or Arrow array of keys (numbers, strings, or struct arrays for
tuples), where the hashing is numpy arithmetic over whole arrays.
"""

from __future__ import annotations

import math
import struct
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import KeyTypeError
from ..keygroups import check_max_parallelism

JavaType = Union[str, tuple]

MAX_TUPLE_ARITY = 25  # Flink has Tuple0 .. Tuple25

_NAMES = {
    "long": "Long", "integer": "Integer", "int": "Integer", "short": "Short",
    "byte": "Byte", "boolean": "Boolean", "character": "Character", "char": "Character",
    "double": "Double", "float": "Float", "string": "String",
}
# Java's canonical NaN bit patterns (Double.doubleToLongBits, Float.floatToIntBits).
_DOUBLE_NAN_BITS = 0x7FF8000000000000
_FLOAT_NAN_BITS = 0x7FC00000
_INT_RANGES = {
    "Long": (-(2**63), 2**63 - 1),
    "Integer": (-(2**31), 2**31 - 1),
    "Short": (-(2**15), 2**15 - 1),
    "Byte": (-(2**7), 2**7 - 1),
}
_ARROW_TYPES = {
    "Long": pa.int64(), "Integer": pa.int32(), "Short": pa.int16(), "Byte": pa.int8(),
    "Boolean": pa.bool_(), "Double": pa.float64(), "Float": pa.float32(),
    "String": pa.large_string(), "Character": pa.uint16(),
}
_MASK32 = 0xFFFFFFFF
# UTF-16 code units each UTF-8 byte starts: 1 for the lead byte of a 1-3 byte
# character, 2 for a 4-byte one's (a surrogate pair), 0 for continuation bytes.
_UTF16_UNITS_OF_UTF8_BYTE = np.array([1] * 0x80 + [0] * 0x40 + [1] * 0x30 + [2] * 0x10, dtype=np.uint8)


def java_type(t: JavaType) -> JavaType:
    """*t* with every class name in its canonical spelling; raises on an unknown type."""
    if isinstance(t, tuple):
        if len(t) > MAX_TUPLE_ARITY:
            raise KeyTypeError(f"Flink tuples have at most {MAX_TUPLE_ARITY} fields, "
                               f"got a key type with {len(t)}")
        return tuple(java_type(f) for f in t)
    name = _NAMES.get(t.lower()) if isinstance(t, str) else None
    if name is None:
        raise KeyTypeError(
            f"cannot compute Flink's hash of a key of Java type {t!r}; supported: "
            "Long, Integer, Short, Byte, Boolean, Character, Double, Float, String "
            "and tuples of these")
    return name


def type_name(t: JavaType) -> str:
    """The Java spelling of a type, e.g. ``Tuple2<String, Integer>``."""
    t = java_type(t)
    if isinstance(t, tuple):
        return f"Tuple{len(t)}<{', '.join(type_name(f) for f in t)}>" if t else "Tuple0"
    return t


def _int32(x: int) -> int:
    x &= _MASK32
    return x - (1 << 32) if x >= 1 << 31 else x


# --- one key ----------------------------------------------------------------------


def string_hash_code(s: str) -> int:
    """Java's ``String.hashCode``: ``31*h + c`` over UTF-16 code units (a character
    outside the BMP counts as its two surrogates)."""
    units = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack("<H", units):
        h = (31 * h + unit) & _MASK32
    return _int32(h)


def _long_hash(v: int) -> int:
    v &= (1 << 64) - 1
    return _int32(v ^ (v >> 32))


def _check_int(value, name: str) -> int:
    lo, hi = _INT_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise KeyTypeError(f"{value!r} is not a Java {name} (an integer in {lo}..{hi})")
    return int(value)


def _hash_code(value, t: JavaType) -> int:
    if isinstance(t, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(t):
            raise KeyTypeError(f"{value!r} is not a {type_name(t)} (a sequence of {len(t)} fields)")
        h = 0  # Flink's TupleN.hashCode: f0's hash, then 31*h + fi's hash; a null field is 0
        for v, ft in zip(value, t):
            h = (31 * h + (0 if v is None else _hash_code(v, ft))) & _MASK32
        return _int32(h)
    if t == "String":
        if not isinstance(value, str):
            raise KeyTypeError(f"{value!r} is not a Java String")
        return string_hash_code(value)
    if t == "Long":
        return _long_hash(_check_int(value, t))
    if t in ("Integer", "Short", "Byte"):
        return _check_int(value, t)
    if t == "Boolean":
        if not isinstance(value, (bool, np.bool_)):
            raise KeyTypeError(f"{value!r} is not a Java Boolean")
        return 1231 if value else 1237
    if t == "Character":
        if isinstance(value, str) and len(value.encode("utf-16-le", "surrogatepass")) == 2:
            return ord(value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= 0xFFFF:
            return int(value)
        raise KeyTypeError(f"{value!r} is not a Java Character (one UTF-16 code unit)")
    if t in ("Double", "Float"):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise KeyTypeError(f"{value!r} is not a Java {t}")
        try:
            packed = struct.pack(">d" if t == "Double" else ">f", float(value))
        except OverflowError:
            raise KeyTypeError(f"{value!r} is too large for a Java {t}") from None
        if t == "Double":
            return _long_hash(_DOUBLE_NAN_BITS if math.isnan(value) else struct.unpack(">q", packed)[0])
        return _FLOAT_NAN_BITS if math.isnan(value) else struct.unpack(">i", packed)[0]
    raise AssertionError(t)


def java_hash_code(value, t: JavaType) -> int:
    """Java's ``hashCode()`` of *value* as a Java object of type *t*, a signed 32-bit int."""
    t = java_type(t)
    if value is None:
        raise KeyTypeError("a Flink key cannot be null")
    return _hash_code(value, t)


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash``: murmur3's mixing of one 32-bit int, made
    non-negative (a negative result is negated; ``Integer.MIN_VALUE`` becomes 0)."""
    c = (code * 0xCC9E2D51) & _MASK32
    c = ((c << 15) | (c >> 17)) & _MASK32
    c = (c * 0x1B873593) & _MASK32
    c = ((c << 13) | (c >> 19)) & _MASK32
    c = (c * 5 + 0xE6546B64) & _MASK32
    c ^= 4
    c ^= c >> 16
    c = (c * 0x85EBCA6B) & _MASK32
    c ^= c >> 13
    c = (c * 0xC2B2AE35) & _MASK32
    c ^= c >> 16
    c = _int32(c)
    return c if c >= 0 else (-c if c != -(1 << 31) else 0)


def flink_key_group(key, key_type: JavaType, max_parallelism: int) -> int:
    """The key group Flink assigns *key* (a Java object of type *key_type*)."""
    check_max_parallelism(max_parallelism)
    return murmur_hash(java_hash_code(key, key_type)) % max_parallelism


# --- many keys: numpy over whole arrays ------------------------------------------------

_U32 = np.uint32


def murmur_hash_array(codes: np.ndarray) -> np.ndarray:
    """:func:`murmur_hash` of every element of an int32 array, as int32."""
    c = np.ascontiguousarray(codes, dtype=np.int32).view(np.uint32).copy()
    c *= _U32(0xCC9E2D51)
    c = (c << _U32(15)) | (c >> _U32(17))
    c *= _U32(0x1B873593)
    c = (c << _U32(13)) | (c >> _U32(19))
    c = c * _U32(5) + _U32(0xE6546B64)
    c ^= _U32(4)
    c ^= c >> _U32(16)
    c *= _U32(0x85EBCA6B)
    c ^= c >> _U32(13)
    c *= _U32(0xC2B2AE35)
    c ^= c >> _U32(16)
    s = c.view(np.int32)
    with np.errstate(over="ignore"):
        return np.where(s >= 0, s, np.where(s != np.iinfo(np.int32).min, -s, 0)).astype(np.int32)


def _as_arrow(values, t: JavaType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, np.ndarray):
        return pa.array(values)
    arrow_type = None if t == "Character" else _arrow_type(t)  # chars: strings or code units
    try:
        return pa.array(list(values), type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
        raise KeyTypeError(f"keys are not all of Java type {type_name(t)}: {e}") from None


def _arrow_type(t: JavaType) -> pa.DataType:
    if isinstance(t, tuple):
        return pa.struct([pa.field(f"f{i}", _arrow_type(f)) for i, f in enumerate(t)])
    return _ARROW_TYPES[t]


def _cast(arr: pa.Array, target: pa.DataType, t: str) -> pa.Array:
    try:
        return pc.cast(arr, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise KeyTypeError(f"keys of Arrow type {arr.type} are not all Java {t} values: {e}") from None


def _check_family(arr: pa.Array, t: str) -> None:
    """Numbers for numeric types, booleans for Boolean: no silent bool/number casts."""
    kind = arr.type
    ok = (pa.types.is_boolean(kind) if t == "Boolean"
          else pa.types.is_integer(kind) or (t in ("Double", "Float") and pa.types.is_floating(kind)))
    if not ok:
        raise KeyTypeError(f"keys of Arrow type {kind} are not Java {t} values")


def _long_hashes(bits: np.ndarray) -> np.ndarray:
    u = bits.view(np.uint64)
    return (u ^ (u >> np.uint64(32))).astype(np.uint32).view(np.int32)


def _string_hashes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(String.hashCode of each string, UTF-16 length of each), all in numpy except
    one UTF-8 to UTF-16 conversion of the array's whole character data."""
    arr = _cast(arr.fill_null(""), pa.large_string(), "String")
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    raw = data_buf.to_pybytes()[start:end] if data_buf is not None else b""
    data = np.frombuffer(raw, dtype=np.uint8)
    per_byte = _UTF16_UNITS_OF_UTF8_BYTE[data]
    unit_offsets = np.concatenate(([0], np.cumsum(per_byte, dtype=np.int64)))[offsets - start]
    units = np.frombuffer(raw.decode("utf-8").encode("utf-16-le"), dtype=np.uint16)
    lengths = np.diff(unit_offsets)
    # h = sum(unit[j] * 31**(n-1-j)) mod 2**32: weight each unit by 31 to the power of
    # its distance from its string's end, then take differences of one running sum.
    owner_end = np.repeat(unit_offsets[1:], lengths)
    power = owner_end - 1 - np.arange(len(units), dtype=np.int64)
    max_len = int(lengths.max()) if len(lengths) else 0
    pow31 = np.full(max(max_len, 1), 31, dtype=np.uint32)
    pow31[0] = 1
    pow31 = np.cumprod(pow31, dtype=np.uint32)
    terms = units.astype(np.uint32) * pow31[power]
    running = np.concatenate(([0], np.cumsum(terms, dtype=np.uint32))).astype(np.uint32)
    hashes = (running[unit_offsets[1:]] - running[unit_offsets[:-1]]).view(np.int32)
    return hashes, lengths


def _array_hashes(arr: pa.Array, t: JavaType) -> np.ndarray:
    """Java hashCode of every value of *arr* as int32 (nulls hash as 0)."""
    if isinstance(t, tuple):
        if not pa.types.is_struct(arr.type) or arr.type.num_fields != len(t):
            raise KeyTypeError(f"keys of Arrow type {arr.type} are not {type_name(t)} values "
                               f"(a struct of {len(t)} fields)")
        h = np.zeros(len(arr), dtype=np.uint32)
        for child, ft in zip(arr.flatten(), t):
            h = h * _U32(31) + _array_hashes(child, ft).view(np.uint32)
        codes = h.view(np.int32)
    elif t == "String":
        codes = _string_hashes(arr)[0]
    elif t == "Character" and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        codes, lengths = _string_hashes(arr)
        if np.any(lengths[np.asarray(arr.is_valid())] != 1):
            raise KeyTypeError("Character keys must be strings of one UTF-16 code unit each")
    else:
        _check_family(arr, t)
        values = _cast(arr, _ARROW_TYPES[t], t).fill_null(False if t == "Boolean" else 0)
        v = values.to_numpy(zero_copy_only=False)
        if t == "Float" and pa.types.is_floating(arr.type):
            before = np.isfinite(arr.fill_null(0).to_numpy(zero_copy_only=False))
            if np.any(before & ~np.isfinite(v)):
                raise KeyTypeError("keys are not all Java Float values: a value is too large "
                                   "for a Java Float")
        if t == "Long":
            codes = _long_hashes(v)
        elif t == "Double":
            codes = _long_hashes(np.where(np.isnan(v), np.int64(_DOUBLE_NAN_BITS), v.view(np.int64)))
        elif t == "Float":
            codes = np.where(np.isnan(v), np.int32(_FLOAT_NAN_BITS), v.view(np.int32))
        elif t == "Boolean":
            codes = np.where(v, 1231, 1237)
        else:  # Integer, Short, Byte, Character: the value itself
            codes = v
    codes = np.asarray(codes).astype(np.int32, copy=False)
    if arr.null_count:
        codes = np.where(np.asarray(arr.is_valid()), codes, np.int32(0))
    return codes


def java_hash_codes(values, key_type: JavaType) -> np.ndarray:
    """Java ``hashCode()`` of many keys of type *key_type*, as an int32 array.

    *values*: a numpy array, an Arrow array (struct arrays for tuples, fields in
    order) or a sequence of Python values. Numbers are cast to the Java type's
    width, refusing values out of its range. A null key is an error; a null tuple
    field hashes as 0, as in Flink's tuples."""
    t = java_type(key_type)
    arr = _as_arrow(values, t)
    if arr.null_count:
        row = int(np.argmin(np.asarray(arr.is_valid())))
        raise KeyTypeError(f"a Flink key cannot be null (key {row} is)")
    return _array_hashes(arr, t)


def flink_key_groups(values, key_type: JavaType, max_parallelism: int) -> np.ndarray:
    """The key group of every key, as an int32 array (see :func:`java_hash_codes`)."""
    check_max_parallelism(max_parallelism)
    return murmur_hash_array(java_hash_codes(values, key_type)) % np.int32(max_parallelism)
