"""The table runtime's binary formats (`BinaryRowData`, `BinaryArrayData`, `BinaryMapData`)
decoded by column.

Serialized, a row is an int length (big-endian, as every Flink stream) and the row's bytes,
which are little-endian (a `MemorySegment`'s native order):

* a header: one byte of `RowKind`, then null bits (bit ``8 + i`` for field ``i``),
  ``((arity + 63 + 8) // 64) * 8`` bytes in all;
* one 8-byte slot per field: fixed-width values inline (from the slot's start); variable
  ones as ``offset << 32 | length`` into the row, or, when at most 7 bytes, inline with the
  slot's top bit set and the length in bits 56-62; a DECIMAL of precision > 18 as
  offset and length of its unscaled big-endian two's-complement bytes; a TIMESTAMP of
  precision > 3 as ``offset << 32 | nano-of-millisecond`` with the epoch millis at the offset;
* the variable part.

An array is ``int n``, null bits in 4-byte words, then elements of 1, 2, 4 or 8 bytes
(variable ones as in a row, relative to the array); a map is ``int key-array bytes``,
the key array, the value array. Every position is checked against the row before
it is read; nothing loops per value except non-compact DECIMALs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from .binary import Reader
from .sqltypes import FIXED_WIDTH, SqlType
from .types import Buf, FlinkType, as_dtype

ROW_KINDS = ("+I", "-U", "+U", "-D")  # RowKind by its byte value: INSERT ... DELETE
ROW_KIND_FIELD = "_rowkind"  # a value row's RowKind, null for INSERT (what nearly every row is)


def null_bits_bytes(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


@dataclass(frozen=True)
class RowData(FlinkType):
    """A `RowDataSerializer` value: one struct field per SQL field (``f0``, ``f1``...), and
    the RowKind (:data:`ROW_KIND_FIELD`) unless it is a key's row (keys are always INSERT)."""
    fields: tuple[SqlType, ...]
    with_kind: bool = True
    serializer: str = "org.apache.flink.table.runtime.typeutils.RowDataSerializer"

    @property
    def names(self) -> list[str]:
        return [f"f{i}" for i in range(len(self.fields))]

    def arrow(self):
        cols = [(n, f.arrow()) for n, f in zip(self.names, self.fields)]
        return pa.struct(cols + ([(ROW_KIND_FIELD, pa.string())] if self.with_kind else []))

    def as_key(self) -> "RowData":
        return RowData(self.fields, False, self.serializer)

    def read(self, r: Reader):
        return _read_one(self, r)

    def skipper(self, buf: Buf):
        return _length_skipper(buf)

    def column(self, buf, starts, limits=None):
        rows, sizes, ends = _framed(buf, starts)
        return decode_rows(buf, rows, sizes, self.fields, self.names, self.with_kind), ends

    def describe(self):
        return "RowData<" + ", ".join(f.sql() for f in self.fields) + ">"


@dataclass(frozen=True)
class SqlValue(FlinkType):
    """An `ArrayDataSerializer` or `MapDataSerializer` value: an int length, then the binary array or map."""
    type: SqlType
    serializer: str = ""

    def arrow(self):
        return self.type.arrow()

    def read(self, r: Reader):
        return _read_one(self, r)

    def skipper(self, buf: Buf):
        return _length_skipper(buf)

    def column(self, buf, starts, limits=None):
        at, sizes, ends = _framed(buf, starts)
        return decode_variable(self.type, buf, at, sizes, np.zeros(len(at), bool)), ends

    def describe(self):
        return self.type.sql()


@dataclass(frozen=True)
class SizedBytes(FlinkType):
    """A value the table runtime frames with an int length but whose contents are not
    described here (a RAW value's serializer's bytes, a `BinaryRowDataSerializer` row
    without field types): its bytes, named by the serializer."""
    serializer: str = ""
    reason: str = ""

    def arrow(self):
        return pa.binary()

    def read(self, r: Reader):
        return r.bytes(r.int())

    def skipper(self, buf: Buf):
        return _length_skipper(buf)

    def column(self, buf, starts, limits=None):
        at, sizes, ends = _framed(buf, starts)
        return buf.slices(at, ends), ends

    def describe(self):
        return f"bytes of {self.serializer.rsplit('.', 1)[-1]}" + (f" ({self.reason})" if self.reason else "")


@dataclass(frozen=True)
class NullValue(FlinkType):
    """The table runtime's `NullSerializer` (a data view's placeholder): no bytes, always null."""
    serializer: str = "org.apache.flink.table.dataview.NullSerializer"
    width = 0

    def arrow(self):
        return pa.null()

    def read(self, r: Reader):
        return None

    def from_matrix(self, m):
        return pa.nulls(len(m))

    def describe(self):
        return "NullSerializer"


def _read_one(t: FlinkType, r: Reader):
    """One value on the per-value path, through the column decoder."""
    start = r.pos
    n = r.int()
    r.skip(n)
    buf = Buf(bytes(r.data[start:r.pos]), r.source, r.base + start)
    return t.column(buf, np.zeros(1, np.int64))[0].to_pylist()[0]


def _length_skipper(buf: Buf):
    data, unpack = buf.data, struct.Struct(">i").unpack_from
    return lambda pos: pos + 4 + unpack(data, pos)[0]


def _framed(buf: Buf, starts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(where each value's bytes start, their length, where the value ends) of int-length-framed values."""
    starts = np.asarray(starts, dtype=np.int64)
    sizes = as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)
    at = starts + 4
    ends = at + sizes
    if len(starts) and (sizes.min() < 0 or int(ends.max()) > len(buf.data)):
        bad = int(np.argmax((sizes < 0) | (ends > len(buf.data))))
        raise FlinkFormatError(f"{buf.source}: a value of {int(sizes[bad])} bytes at offset "
                               f"{buf.base + int(starts[bad])} runs past the end of its bytes")
    return at, sizes, ends


def _le(buf: Buf, pos: np.ndarray, dtype: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return as_dtype(buf.gather(pos, width), dtype)


def _bit(buf: Buf, base: np.ndarray, index) -> np.ndarray:
    """Bit *index* (per row or one for all) of the null bits at *base*."""
    index = np.asarray(index, dtype=np.int64)
    byte = buf.arr[base + (index >> 3)] if len(base) else np.zeros(0, np.uint8)
    return ((byte >> (index & 7).astype(np.uint8)) & 1) != 0


def _masked(values: pa.Array, null: np.ndarray) -> pa.Array:
    import pyarrow.compute as pc  # here, not at the top: `info` loads this module and decodes no rows

    if not null.any():
        return values
    return pc.if_else(pa.array(~null), values, pa.scalar(None, values.type))


def _check_within(buf: Buf, start: np.ndarray, length: np.ndarray, base: np.ndarray, size: np.ndarray,
                  what: str) -> None:
    bad = (length < 0) | (start < base) | (start + length > base + size)
    if bad.any():
        i = int(np.argmax(bad))
        raise FlinkFormatError(f"{buf.source}: a {what} at offset {buf.base + int(start[i])} "
                               f"({int(length[i])} bytes) lies outside its row or array")


def decode_rows(buf: Buf, rows: np.ndarray, sizes: np.ndarray, fields: tuple[SqlType, ...],
                names: list[str], with_kind: bool, null: np.ndarray | None = None) -> pa.StructArray:
    """The rows starting at *rows* (each *sizes* bytes), one struct per row."""
    if null is not None and null.any():  # decode the rows that are there, then spread them out
        present = ~null
        inner = decode_rows(buf, rows[present], sizes[present], fields, names, with_kind)
        idx = np.cumsum(present) - 1
        return inner.take(pa.array(idx, mask=null))
    n, arity = len(rows), len(fields)
    fixed = null_bits_bytes(arity) + 8 * arity
    if n and (sizes < fixed).any():
        i = int(np.argmax(sizes < fixed))
        raise FlinkFormatError(f"{buf.source}: a row of {arity} field(s) at offset {buf.base + int(rows[i])} "
                               f"has {int(sizes[i])} bytes, fewer than its {fixed}-byte fixed part")
    arrays, out_names = [], list(names)
    for i, t in enumerate(fields):
        field_null = _bit(buf, rows, i + 8)
        slots = rows + null_bits_bytes(arity) + 8 * i
        arrays.append(decode_slot(t, buf, slots, rows, sizes, field_null))
    if with_kind:
        kind = buf.arr[rows] if n else np.zeros(0, np.uint8)
        if n and kind.max() > 3:
            i = int(np.argmax(kind > 3))
            raise FlinkFormatError(f"{buf.source}: unknown RowKind {int(kind[i])} at offset {buf.base + int(rows[i])}")
        labels = pa.array(ROW_KINDS[1:], pa.string()).take(pa.array(np.maximum(kind.astype(np.int64) - 1, 0)))
        arrays.append(_masked(labels, kind == 0))
        out_names.append(ROW_KIND_FIELD)
    if not arrays:
        return pa.array([{}] * n, pa.struct([]))
    return pa.StructArray.from_arrays(arrays, names=out_names)


def decode_slot(t: SqlType, buf: Buf, slots: np.ndarray, base: np.ndarray, size: np.ndarray,
                null: np.ndarray) -> pa.Array:
    """The values of type *t* whose slots (or array elements) are at *slots*, in rows or
    arrays starting at *base* of *size* bytes; *null* where the value is null."""
    r = t.root
    n = len(slots)
    if r == "NULL":
        return pa.nulls(n)
    if r in FIXED_WIDTH or (r in ("DECIMAL", "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE")
                            and t.compact):
        return _masked(_fixed(t, buf, slots), null)
    if r == "DECIMAL":
        return _big_decimal(t, buf, slots, base, size, null)
    if r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        word = _le(buf, slots, "<i8")
        offset, nanos = word >> 32, word & 0xFFFFFFFF
        at = np.where(null, base, base + offset)
        _check_within(buf, at, np.where(null, 0, 8), base, size, "timestamp")
        millis = np.where(null, 0, _le(buf, np.where(null, slots, at), "<i8"))
        return _masked(_timestamps(t, millis, np.where(null, 0, nanos), buf.source), null)
    start, length = _variable_extent(buf, slots, base, size, null)
    return _masked(decode_variable(t, buf, start, length, null), null)


def _fixed(t: SqlType, buf: Buf, slots: np.ndarray) -> pa.Array:
    r = t.root
    if r == "BOOLEAN":
        return pa.array(buf.arr[slots] != 0 if len(slots) else np.zeros(0, bool))
    if r == "TINYINT":
        return pa.array(_le(buf, slots, "<i1"))
    if r == "SMALLINT":
        return pa.array(_le(buf, slots, "<i2"))
    if r in ("INTEGER", "INTERVAL_YEAR_MONTH"):
        return pa.array(_le(buf, slots, "<i4"))
    if r == "DATE":
        return pa.array(_le(buf, slots, "<i4"), pa.int32()).cast(pa.date32())
    if r == "TIME_WITHOUT_TIME_ZONE":
        return pa.array(_le(buf, slots, "<i4").astype(np.int64) * 1_000_000, pa.int64()).cast(pa.time64("ns"))
    if r == "FLOAT":
        return pa.array(_le(buf, slots, "<f4"))
    if r == "DOUBLE":
        return pa.array(_le(buf, slots, "<f8"))
    if r == "DECIMAL":
        return _decimals(t, _le(buf, slots, "<i8"))
    if r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        return _timestamps(t, _le(buf, slots, "<i8"), np.zeros(len(slots), np.int64))
    return pa.array(_le(buf, slots, "<i8"))  # BIGINT, INTERVAL_DAY_TIME


NS_MILLIS = (-(2**63) // 1_000_000 + 1, (2**63 - 1) // 1_000_000 - 1)  # millis whose nanos fit int64


def _timestamps(t: SqlType, millis: np.ndarray, nanos: np.ndarray, source: str = "") -> pa.Array:
    """Epoch millis and nanos of the millisecond in the type's unit. A TIMESTAMP(7..9) is
    held in nanoseconds (years 1678 to 2261); a value outside them is refused, never wrapped."""
    unit = t.arrow().unit
    if unit == "ms":
        value = millis
    elif unit == "us":
        value = millis * 1000 + nanos // 1000
    else:
        outside = (millis < NS_MILLIS[0]) | (millis > NS_MILLIS[1])
        if outside.any():
            raise UnsupportedFlinkFeature(
                f"{source}: a {t.sql()} value ({int(millis[np.argmax(outside)])} ms since the epoch) lies "
                "outside the years 1678-2261 that nanosecond timestamps hold")
        value = millis * 1_000_000 + nanos
    return pa.array(value.astype(np.int64), pa.int64()).cast(t.arrow())


def _decimals(t: SqlType, unscaled: np.ndarray) -> pa.Array:
    """Unscaled int64 values as decimal128 (two little-endian words per value, sign-extended)."""
    words = np.empty((len(unscaled), 2), dtype="<i8")
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    return pa.Array.from_buffers(t.arrow(), len(unscaled), [None, pa.py_buffer(words.tobytes())])


def _big_decimal(t: SqlType, buf: Buf, slots, base, size, null) -> pa.Array:
    word = _le(buf, slots, "<i8")
    offset, length = word >> 32, word & 0xFFFFFFFF
    at = np.where(null, base, base + offset)
    length = np.where(null, 0, length)
    _check_within(buf, at, length, base, size, "decimal")
    words = np.zeros((len(slots), 2), dtype="<i8")
    raw = words.view(np.uint8).reshape(len(slots), 16)
    for i in np.nonzero(~null)[0].tolist():  # rare (precision > 18): one Python int per value
        v = int.from_bytes(buf.data[at[i]:at[i] + length[i]], "big", signed=True)
        raw[i] = np.frombuffer(v.to_bytes(16, "little", signed=True), np.uint8)
    return _masked(pa.Array.from_buffers(t.arrow(), len(slots), [None, pa.py_buffer(words.tobytes())]), null)


def _variable_extent(buf: Buf, slots, base, size, null) -> tuple[np.ndarray, np.ndarray]:
    """Where each variable-length value's bytes lie: inline in its slot, or in the variable part."""
    word = _le(buf, slots, "<u8")
    inline = (word >> np.uint64(63)) != 0
    start = np.where(inline, slots, base + (word >> np.uint64(32)).astype(np.int64))
    length = np.where(inline, (word >> np.uint64(56)).astype(np.int64) & 0x7F,
                      (word & np.uint64(0xFFFFFFFF)).astype(np.int64))
    start = np.where(null, base, start)
    length = np.where(null, 0, length)
    _check_within(buf, start, length, base, size, "value")
    return start, length


def decode_variable(t: SqlType, buf: Buf, start: np.ndarray, length: np.ndarray, null: np.ndarray) -> pa.Array:
    """Values whose bytes are [start, start + length): strings, bytes, arrays, maps, rows."""
    r = t.root
    if r in ("CHAR", "VARCHAR"):
        raw = buf.slices(start, start + length)
        strings = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
        try:
            strings.validate(full=True)
        except pa.ArrowInvalid:
            raise FlinkFormatError(f"{buf.source}: a string value is not valid UTF-8") from None
        return strings
    if r in ("BINARY", "VARBINARY", "RAW"):
        return buf.slices(start, start + length)
    if r in ("ROW", "STRUCTURED_TYPE"):
        names = list(t.names)
        return decode_rows(buf, start, length, t.children, names, False, null)
    if r == "ARRAY":
        offsets, values = _array_elements(t.children[0], buf, start, length, null)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values,
                                        mask=pa.array(null) if null.any() else None)
    if r in ("MAP", "MULTISET"):
        key_type = t.children[0]
        value_type = t.children[1] if r == "MAP" else SqlType("INTEGER", False)
        _check_within(buf, start, np.where(null, 0, 4), start, length, "map")
        key_bytes = np.where(null, 0, _le(buf, start, "<i4").astype(np.int64))
        key_start = np.where(null, start, start + 4)
        _check_within(buf, key_start, key_bytes, start, length, "map's keys")
        offsets, keys = _array_elements(key_type, buf, key_start, key_bytes, null)
        value_start = key_start + key_bytes
        value_bytes = np.where(null, 0, length - 4 - key_bytes)
        _, values = _array_elements(value_type, buf, value_start, value_bytes, null)
        if len(keys) != len(values):
            raise FlinkFormatError(f"{buf.source}: a map's key and value arrays differ in length")
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, values,
                                       mask=pa.array(null) if null.any() else None)
    raise FlinkFormatError(f"{buf.source}: no variable-length layout for SQL type {t.sql()}")


def _array_elements(t: SqlType, buf: Buf, start: np.ndarray, length: np.ndarray, null: np.ndarray
                    ) -> tuple[np.ndarray, pa.Array]:
    """The list offsets and the flattened elements of the binary arrays at *start*."""
    counts = np.zeros(len(start), np.int64)
    present = ~null
    if present.any():
        _check_within(buf, start[present], np.full(int(present.sum()), 4), start[present], length[present],
                      "array size")
        counts[present] = _le(buf, start[present], "<i4")
    header = 4 + ((counts + 31) // 32) * 4
    width = FIXED_WIDTH.get(t.root, 8)
    _check_within(buf, start, np.where(null, 0, header + counts * width), start, length, "array")
    offsets = np.zeros(len(start) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    owner = np.repeat(np.arange(len(start)), counts)
    index = np.arange(total) - offsets[owner]
    bases = start[owner]
    slots = bases + header[owner] + index * width
    elem_null = _bit(buf, bases + 4, index) if total else np.zeros(0, bool)
    values = decode_slot(t, buf, slots, bases, length[owner], elem_null)
    return offsets, values
