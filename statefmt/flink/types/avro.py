"""Avro values as flink-avro's `AvroSerializer` writes them, decoded as columns: the leaves.

flink-avro writes through its own `DataOutputEncoder`, not Avro's binary encoding: `int`,
`long`, `float`, `double` big-endian and fixed-width (so :class:`~.scalars.Scalar` decodes
them), `boolean` one byte, `null` nothing, an enum symbol's and a union branch's index as a
4-byte big-endian int, `string` and `bytes` as a 4-byte big-endian length and the bytes
(UTF-8 for strings), `fixed` as its bytes, arrays and maps as blocks each led by an unsigned
base-128 varint item count and ended by a count of 0.

Every length and count is checked against the bytes of its value before anything is
allocated or read; a damaged value raises :class:`AvroDataError` naming what and where.
The composites (records, unions, arrays, maps) are in :mod:`.avro_composite`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .base import DamagedValue, FlinkType
from .buffer import Buf, as_dtype

SERIALIZER = "org.apache.flink.formats.avro.typeutils.AvroSerializer"
MAX_COUNT_BYTES = 9  # a varint count of up to 63 bits


class AvroDataError(DamagedValue):
    """A damaged Avro value."""

    kind = "Avro"


def damaged(buf: Buf, what: str, at: int) -> AvroDataError:
    return AvroDataError(buf.source, what, at, buf.base)


def bounds(buf: Buf, starts: np.ndarray, limits) -> np.ndarray:
    """Each value's limit: the end of its enclosing value where known, else of the bytes."""
    if limits is None:
        return np.full(len(starts), len(buf.data), dtype=np.int64)
    return np.minimum(np.asarray(limits, dtype=np.int64), len(buf.data))


def fixed_column(t: FlinkType, buf: Buf, starts: np.ndarray, limits) -> tuple[pa.Array, np.ndarray]:
    """A fixed-width value per start, each checked to end within its limit."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = starts + t.width
    over = ends > bounds(buf, starts, limits)
    if over.any():
        at = int(starts[np.argmax(over)])
        raise damaged(buf, f"a {t.describe()} of {t.width} byte(s) runs past the end of its value", at)
    return t.from_matrix(buf.gather(starts, t.width)), ends


def read_ints(buf: Buf, starts: np.ndarray, limits, what: str) -> np.ndarray:
    """The 4-byte big-endian int at each start (an index or a length), bounds-checked."""
    if len(starts) and (starts + 4 > bounds(buf, starts, limits)).any():
        at = int(starts[np.argmax(starts + 4 > bounds(buf, starts, limits))])
        raise damaged(buf, f"the {what} runs past the end of its value", at)
    return as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)


def read_counts(buf: Buf, starts: np.ndarray, lim: np.ndarray, min_width: int, what: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """The varint item count at each start and where its items start.

    A count is refused when its items, at *min_width* bytes each (at least 1), cannot fit
    in what is left of their value: nothing is allocated for a damaged count.
    """
    value = np.zeros(len(starts), dtype=np.int64)
    cur = starts.copy()
    live = np.arange(len(starts))
    for j in range(MAX_COUNT_BYTES):
        if not len(live):
            break
        p = cur[live]
        past = p >= lim[live]
        if past.any():
            raise damaged(buf, f"the {what} item count runs past the end of its value", int(p[np.argmax(past)]))
        b = buf.arr[p].astype(np.int64)
        value[live] |= (b & 0x7F) << (7 * j)
        cur[live] = p + 1
        live = live[b >= 0x80]
    if len(live):
        raise damaged(buf, f"the {what} item count is longer than {MAX_COUNT_BYTES} bytes", int(starts[live[0]]))
    too_many = value * max(min_width, 1) > lim - cur
    if too_many.any():
        i = int(np.argmax(too_many))
        raise damaged(buf, f"{what} of {int(value[i])} items cannot fit in the {int(lim[i] - cur[i])} bytes "
                      "left of its value", int(starts[i]))
    return value, cur


@dataclass(frozen=True)
class AvroNull(FlinkType):
    serializer: str = SERIALIZER
    width = 0

    def arrow(self):
        return pa.null()

    def read(self, r):
        return None

    def from_matrix(self, m):
        return pa.nulls(len(m))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        return pa.nulls(len(starts)), starts

    def describe(self):
        return "null"


@dataclass(frozen=True)
class AvroString(FlinkType):
    """`string` (UTF-8) or `bytes`: a 4-byte big-endian length, then the bytes."""
    binary: bool = False
    serializer: str = SERIALIZER

    def arrow(self):
        return pa.binary() if self.binary else pa.string()

    def read(self, r):
        at = r.pos
        n = r.int()
        if n < 0:
            raise r.error(f"damaged Avro value: negative {self.describe()} length {n}", at)
        raw = r.bytes(n)
        return raw if self.binary else raw.decode("utf-8")

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        lim = bounds(buf, starts, limits)
        lengths = read_ints(buf, starts, lim, f"{self.describe()} length")
        ends = starts + 4 + lengths
        bad = (lengths < 0) | (ends > lim)
        if bad.any():
            i = int(np.argmax(bad))
            raise damaged(buf, f"a {self.describe()} length of {int(lengths[i])} does not fit in its value",
                          int(starts[i]))
        raw = buf.slices(starts + 4, ends)
        if self.binary:
            return raw, ends
        strings = raw.view(pa.string())
        if not _valid(strings):
            raise damaged(buf, "a string is not UTF-8", int(starts[_first_invalid(strings)]))
        return strings, ends

    def describe(self):
        return "bytes" if self.binary else "string"


@dataclass(frozen=True)
class AvroFixed(FlinkType):
    """`fixed`: exactly *size* bytes."""
    name: str
    size: int
    serializer: str = SERIALIZER

    @property
    def width(self):  # type: ignore[override]
        return self.size

    def arrow(self):
        return pa.binary()

    def read(self, r):
        return r.bytes(self.size)

    def from_matrix(self, m):
        n = len(m)
        offsets = (np.arange(n + 1, dtype=np.int32) * self.size)
        data = np.ascontiguousarray(m).tobytes()
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])

    def column(self, buf, starts, limits=None):
        return fixed_column(self, buf, starts, limits)

    def describe(self):
        return f"fixed {self.name}"


@dataclass(frozen=True)
class AvroEnum(FlinkType):
    """`enum`: the symbol's index as a 4-byte big-endian int; read as the symbol."""
    name: str
    symbols: tuple[str, ...]
    serializer: str = SERIALIZER
    width = 4

    def arrow(self):
        return pa.string()

    def read(self, r):
        at = r.pos
        i = r.int()
        if not 0 <= i < len(self.symbols):
            raise r.error(f"damaged Avro value: enum {self.name} has no symbol {i}", at)
        return self.symbols[i]

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        index = read_ints(buf, starts, limits, f"enum {self.name} index")
        bad = (index < 0) | (index >= len(self.symbols))
        if bad.any():
            i = int(np.argmax(bad))
            raise damaged(buf, f"enum {self.name} has no symbol {int(index[i])}", int(starts[i]))
        return pa.array(self.symbols, pa.string()).take(pa.array(index)), starts + 4

    def describe(self):
        return f"enum {self.name}"


@dataclass(frozen=True)
class AvroLogical(FlinkType):
    """A logical type over a fixed-width primitive (dates, times, timestamps): its Arrow type."""
    inner: FlinkType
    logical: str
    to: pa.DataType
    serializer: str = SERIALIZER

    @property
    def width(self):  # type: ignore[override]
        return self.inner.width

    def arrow(self):
        return self.to

    def read(self, r):
        return self.inner.read(r)

    def from_matrix(self, m):
        return self.inner.from_matrix(m).cast(self.to)

    def column(self, buf, starts, limits=None):
        return fixed_column(self, buf, starts, limits)

    def describe(self):
        return self.logical


def _valid(values: pa.Array) -> bool:
    """Whether Arrow finds every value valid (UTF-8 strings, decimals within their precision)."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _first_invalid(values: pa.Array) -> int:
    """The first invalid value's row (on the error path only: value by value)."""
    return next(i for i in range(len(values)) if not _valid(values.slice(i, 1)))


def _unscaled_le16(buf: Buf, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Big-endian two's complement integers of 1..16 bytes as (n, 16) little-endian rows."""
    n = len(starts)
    first = buf.arr[starts].astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    out = np.where((first >= 0x80)[:, None], np.uint8(0xFF), np.uint8(0)).astype(np.uint8) * np.ones(
        (1, 16), dtype=np.uint8)
    rows = np.repeat(np.arange(n), lengths)
    k = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # byte index in value
    out[rows, np.repeat(lengths, lengths) - 1 - k] = buf.arr[np.repeat(starts, lengths) + k]
    return out


@dataclass(frozen=True)
class AvroDecimal(FlinkType):
    """`decimal` on `bytes` or `fixed`: the unscaled value, big-endian two's complement."""
    inner: FlinkType  # AvroString(binary=True) or AvroFixed
    precision: int
    scale: int
    serializer: str = SERIALIZER

    @property
    def width(self):  # type: ignore[override]
        return self.inner.width

    def arrow(self):
        return pa.decimal128(self.precision, self.scale)

    def read(self, r):
        import decimal

        raw = self.inner.read(r)
        return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-self.scale)

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        if self.inner.width is None:
            lengths = read_ints(buf, starts, limits, "decimal length")
            first = starts + 4
        else:
            lengths, first = np.full(len(starts), self.inner.width, dtype=np.int64), starts
        _, ends = self.inner.column(buf, starts, limits)  # checks the lengths against the value
        bad = (lengths < 1) | (lengths > 16)
        if bad.any():
            i = int(np.argmax(bad))
            raise damaged(buf, f"a decimal of {int(lengths[i])} bytes (1 to 16 hold precision "
                          f"{self.precision})", int(starts[i]))
        data = _unscaled_le16(buf, first, lengths)
        values = pa.Array.from_buffers(self.arrow(), len(starts), [None, pa.py_buffer(data.tobytes())])
        if not _valid(values):
            raise damaged(buf, f"a decimal exceeds precision {self.precision}", int(starts[_first_invalid(values)]))
        return values, ends

    def describe(self):
        return f"decimal({self.precision}, {self.scale})"
