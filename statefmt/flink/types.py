"""Flink value types, as read from serializer snapshots, and their columnar decoding.

Each type knows its Arrow type, its serializer's class name, whether its
encoding is fixed-width, and how to decode a *column*: the values starting at
many offsets of one buffer at once. Fixed-width types are decoded with numpy
over the gathered bytes; variable-width ones read value by value, and
composite ones decode field by field, each field as one column.
"""

from __future__ import annotations

import datetime
import struct
import decimal
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from .binary import Reader, utf16_units_to_str

LONG_MIN = -(1 << 63)


class Buf:
    """The bytes of one stream (or block), with a numpy view, named for errors."""

    __slots__ = ("data", "arr", "source", "base")

    def __init__(self, data: bytes, source: str, base: int = 0):
        self.data = data
        self.arr = np.frombuffer(data, dtype=np.uint8)
        self.source = source
        self.base = base

    def reader(self) -> Reader:
        return Reader(self.data, self.source, base=self.base)

    def gather(self, starts: np.ndarray, width: int) -> np.ndarray:
        """An (n, width) matrix of the bytes at each start."""
        if len(starts) and int(starts.max()) + width > len(self.data):
            bad = int(starts[np.argmax(starts + width > len(self.data))])
            raise FlinkFormatError(f"{self.source}: ends early: a {width}-byte value at offset "
                                   f"{self.base + bad} runs past the end")
        if width == 0 or not len(starts):
            return np.zeros((len(starts), width), dtype=np.uint8)
        return np.lib.stride_tricks.sliding_window_view(self.arr, width)[starts]

    def slices(self, starts: np.ndarray, ends: np.ndarray, parts: int = 1) -> pa.BinaryArray:
        """The bytes [start, end) of every row, as one binary column, copied by a compiled loop.

        With *parts* > 1, each row is that many consecutive (start, end) pairs joined.
        """
        lengths = (ends - starts).astype(np.int64)
        if len(lengths) and (lengths.min() < 0 or int(ends.max()) > len(self.data)):
            raise FlinkFormatError(f"{self.source}: a value runs past the end of its bytes")
        offsets = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] == 0:
            data = np.empty(0, dtype=np.uint8)
        else:
            from .kernels import concat_slices
            data = concat_slices(self.arr, np.ascontiguousarray(starts, dtype=np.int64), offsets)
        offsets = np.ascontiguousarray(offsets[::parts])
        large = offsets[-1] > 2**31 - 1
        return pa.Array.from_buffers(
            pa.large_binary() if large else pa.binary(), len(offsets) - 1,
            [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)])


def as_dtype(m: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(m).view(dtype).ravel()


class FlinkType:
    """A value type; subclasses set *serializer* and implement :meth:`read` and :meth:`arrow`."""

    serializer: str = ""
    width: int | None = None  # bytes per value when fixed-width

    def arrow(self) -> pa.DataType:
        raise NotImplementedError

    def read(self, r: Reader):
        """One value as Python (the per-value path)."""
        raise NotImplementedError

    def from_matrix(self, m: np.ndarray) -> pa.Array:
        raise NotImplementedError

    @property
    def decodable(self) -> bool:
        """Whether value boundaries are known without an enclosing length."""
        return True

    def describe(self) -> str:
        return self.serializer.rsplit(".", 1)[-1]

    def skipper(self, buf: Buf):
        """A function from a value's start in *buf* to its end (to walk streams without lengths)."""
        if self.width is not None:
            width = self.width
            return lambda pos: pos + width
        r = buf.reader()
        read = self.read

        def skip(pos: int) -> int:
            r.pos = pos
            read(r)
            return r.pos
        return skip

    def column(self, buf: Buf, starts: np.ndarray, limits: np.ndarray | None = None
               ) -> tuple[pa.Array, np.ndarray]:
        """The values starting at *starts* and where each ends; *limits* bound each value."""
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return self.from_matrix(buf.gather(starts, self.width)), starts + self.width
        r = buf.reader()
        values = [None] * len(starts)
        ends = np.empty(len(starts), dtype=np.int64)
        read = self.read
        for i, s in enumerate(starts.tolist()):
            r.pos = s
            values[i] = read(r)
            ends[i] = r.pos
        return pa.array(values, type=self.arrow()), ends


# --- scalars -------------------------------------------------------------------

_SCALARS = {
    # kind: (arrow type, width, numpy big-endian dtype, Reader method)
    "long": (pa.int64(), 8, ">i8", "long"),
    "int": (pa.int32(), 4, ">i4", "int"),
    "short": (pa.int16(), 2, ">i2", "short"),
    "byte": (pa.int8(), 1, "i1", "byte"),
    "double": (pa.float64(), 8, ">f8", "double"),
    "float": (pa.float32(), 4, ">f4", "float"),
    "boolean": (pa.bool_(), 1, None, "bool"),
}


@dataclass(frozen=True)
class Scalar(FlinkType):
    kind: str
    serializer: str = ""

    @property
    def width(self) -> int:  # type: ignore[override]
        return _SCALARS[self.kind][1]

    def arrow(self):
        return _SCALARS[self.kind][0]

    def read(self, r):
        return getattr(r, _SCALARS[self.kind][3])()

    def from_matrix(self, m):
        if self.kind == "boolean":
            return pa.array(m[:, 0] != 0)
        dtype = _SCALARS[self.kind][2]
        return pa.array(as_dtype(m, dtype).astype(dtype.replace(">", "<")))

    def describe(self):
        return self.kind


@dataclass(frozen=True)
class Char(FlinkType):
    serializer: str = ""
    width = 2

    def arrow(self):
        return pa.string()

    def read(self, r):
        return utf16_units_to_str([r.ushort()])

    def from_matrix(self, m):
        return pa.array([utf16_units_to_str([u]) for u in as_dtype(m, ">u2").tolist()], pa.string())


@dataclass(frozen=True)
class String(FlinkType):
    serializer: str = ""

    def arrow(self):
        return pa.string()

    def read(self, r):
        return r.string_value()

    def skipper(self, buf):
        data, n_data = buf.data, len(buf.data)
        slow = super().skipper(buf)

        def skip(pos: int) -> int:
            b = data[pos]
            if b < 0x80:
                end = pos + b if b else pos + 1  # length + 1 in one byte
                if end <= n_data and data[pos + 1:end].isascii():
                    return end
            return slow(pos)
        return skip

    def column(self, buf, starts, limits=None):
        """ASCII strings shorter than 127 characters (one length byte) without a Python loop."""
        starts = np.asarray(starts, dtype=np.int64)
        if not len(starts):
            return pa.array([], pa.string()), starts
        first = buf.gather(starts, 1)[:, 0].astype(np.int64)
        if first.max() >= 0x80:
            return super().column(buf, starts, limits)
        null = first == 0
        lengths = np.where(null, 0, first - 1)
        ends = starts + 1 + lengths
        if int(ends.max()) > len(buf.data):
            return super().column(buf, starts, limits)  # reports where it runs off the end
        raw = buf.slices(starts + 1, ends)
        chars = np.frombuffer(raw.buffers()[2], dtype=np.uint8) if raw.buffers()[2] is not None else None
        if chars is not None and len(chars) and chars[: int(lengths.sum())].max() >= 0x80:
            return super().column(buf, starts, limits)
        strings = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers()[:1] + raw.buffers()[1:])
        if null.any():
            strings = pc.if_else(pa.array(null), pa.scalar(None, pa.string()), strings)
        return strings, ends

    def describe(self):
        return "String"


@dataclass(frozen=True)
class Epoch(FlinkType):
    """Date, java.sql.Date/Time (a long of epoch ms, Long.MIN_VALUE = null)."""
    serializer: str = ""
    width = 8

    def arrow(self):
        return pa.timestamp("ms")

    def read(self, r):
        v = r.long()
        return None if v == LONG_MIN else v

    def from_matrix(self, m):
        v = as_dtype(m, ">i8").astype("<i8")
        return pa.array(v, pa.int64(), mask=v == LONG_MIN).cast(pa.timestamp("ms"))


@dataclass(frozen=True)
class SecondsNanos(FlinkType):
    """Instant (epoch seconds, nanos) and java.sql.Timestamp (epoch ms, nanos of the second)."""
    millis: bool
    serializer: str = ""
    width = 12

    def arrow(self):
        return pa.timestamp("ns")

    def _ns(self, first, nanos):
        seconds = np.floor_divide(first, 1000) if self.millis else first
        return seconds * 1_000_000_000 + nanos

    def read(self, r):
        first, nanos = r.long(), r.int()
        if first == LONG_MIN:
            return None
        return int(self._ns(first, nanos))

    def from_matrix(self, m):
        first = as_dtype(m[:, :8], ">i8").astype("<i8")
        nanos = as_dtype(m[:, 8:], ">i4").astype("<i8")
        return pa.array(self._ns(first, nanos), pa.int64(), mask=first == LONG_MIN).cast(pa.timestamp("ns"))


@dataclass(frozen=True)
class LocalDate(FlinkType):
    serializer: str = ""
    width = 6

    def arrow(self):
        return pa.date32()

    def read(self, r):
        year = r.int()
        month, day = r.byte(), r.byte()
        return None if year == -(1 << 31) else datetime.date(year, month, day)

    @staticmethod
    def days(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Days since the epoch and the null mask of LocalDate bytes."""
        year = as_dtype(m[:, :4], ">i4").astype(np.int64)
        null = year == -(1 << 31)
        year = np.where(null, 1970, year)
        month = np.where(null, 1, m[:, 4].astype(np.int64))
        day = np.where(null, 1, m[:, 5].astype(np.int64))
        months = (year - 1970) * 12 + (month - 1)
        first = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
        return first + day - 1, null

    def from_matrix(self, m):
        days, null = self.days(m)
        return pa.array(days.astype(np.int32), pa.int32(), mask=null).cast(pa.date32())


@dataclass(frozen=True)
class LocalTime(FlinkType):
    serializer: str = ""
    width = 7

    def arrow(self):
        return pa.time64("ns")

    def read(self, r):
        hour = r.byte()
        minute, second, nano = r.byte(), r.byte(), r.int()
        if hour == -128:
            return None
        return ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nano

    @staticmethod
    def nanos(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hour = m[:, 0].astype(np.int8).astype(np.int64)
        null = hour == -128
        nano = as_dtype(m[:, 3:7], ">i4").astype(np.int64)
        value = ((hour * 60 + m[:, 1].astype(np.int64)) * 60 + m[:, 2].astype(np.int64)) * 1_000_000_000 + nano
        return np.where(null, 0, value), null

    def from_matrix(self, m):
        value, null = self.nanos(m)
        return pa.array(value, pa.int64(), mask=null).cast(pa.time64("ns"))


@dataclass(frozen=True)
class LocalDateTime(FlinkType):
    serializer: str = ""
    width = 13

    def arrow(self):
        return pa.timestamp("ns")

    def read(self, r):
        date = LocalDate().read(r)
        time = LocalTime().read(r)
        if date is None:
            return None
        days = (date - datetime.date(1970, 1, 1)).days
        return days * 86_400_000_000_000 + time

    def from_matrix(self, m):
        days, null = LocalDate.days(m[:, :6])
        nanos, _ = LocalTime.nanos(m[:, 6:])
        return pa.array(days * 86_400_000_000_000 + nanos, pa.int64(), mask=null).cast(pa.timestamp("ns"))


def _read_big_integer(r: Reader):
    n = r.int()
    if n < 4:
        return (None, 0, 1, 10)[n] if 0 <= n else _bad(r, n)
    return int.from_bytes(r.bytes(n - 4), "big", signed=True)


def _bad(r: Reader, n: int):
    raise r.error(f"bad BigInteger length {n}", r.pos - 4)


@dataclass(frozen=True)
class BigInteger(FlinkType):
    serializer: str = ""

    def arrow(self):
        return pa.string()

    def read(self, r):
        v = _read_big_integer(r)
        return None if v is None else str(v)


@dataclass(frozen=True)
class BigDecimal(FlinkType):
    serializer: str = ""

    def arrow(self):
        return pa.string()

    def read(self, r):
        unscaled = _read_big_integer(r)
        if unscaled is None:
            return None
        scale = r.int()
        exact = decimal.Context(prec=len(str(abs(unscaled))) + 1)  # no rounding of long values
        return str(decimal.Decimal(unscaled).scaleb(-scale, exact))


@dataclass(frozen=True)
class Enum(FlinkType):
    enum_class: str
    values: tuple[str, ...]
    serializer: str = ""
    width = 4

    def arrow(self):
        return pa.string()

    def read(self, r):
        i = r.int()
        return self.values[i] if 0 <= i < len(self.values) else str(i)

    def from_matrix(self, m):
        ordinals = as_dtype(m, ">i4").astype(np.int64)
        if len(ordinals) and (ordinals.min() < 0 or ordinals.max() >= len(self.values)):
            raise FlinkFormatError(f"enum {self.enum_class}: ordinal out of range")
        return pa.array(self.values, pa.string()).take(pa.array(ordinals))

    def describe(self):
        return f"enum {self.enum_class}"


@dataclass(frozen=True)
class VoidNamespace(FlinkType):
    """VoidNamespace and GlobalWindow: one byte, no value."""
    serializer: str = ""
    width = 1

    def arrow(self):
        return pa.null()

    def read(self, r):
        r.skip(1)
        return None

    def from_matrix(self, m):
        return pa.nulls(len(m))

    def describe(self):
        return "VoidNamespace" if "Void" in self.serializer else "GlobalWindow"


@dataclass(frozen=True)
class TimeWindow(FlinkType):
    serializer: str = ""
    width = 16

    def arrow(self):
        return pa.struct([("start", pa.int64()), ("end", pa.int64())])

    def read(self, r):
        return {"start": r.long(), "end": r.long()}

    def from_matrix(self, m):
        return pa.StructArray.from_arrays(
            [pa.array(as_dtype(m[:, :8], ">i8").astype("<i8")), pa.array(as_dtype(m[:, 8:], ">i8").astype("<i8"))],
            names=["start", "end"])

    def describe(self):
        return "TimeWindow"


@dataclass(frozen=True)
class Opaque(FlinkType):
    """A value whose snapshot does not describe it (Kryo, Avro, custom): its raw bytes.

    Its extent is only known when it is the last thing in a length-delimited
    value or key; anywhere else it cannot be found.
    """
    serializer: str = ""
    reason: str = ""

    def arrow(self):
        return pa.binary()

    @property
    def decodable(self) -> bool:
        return False

    def read(self, r):
        raise UnsupportedFlinkFeature(
            f"{r.source}: a value of {self.serializer} cannot be decoded here ({self.reason or 'opaque'})")

    def column(self, buf, starts, limits=None):
        if limits is None:
            raise UnsupportedFlinkFeature(
                f"{buf.source}: values of {self.serializer} cannot be delimited "
                f"({self.reason or 'no field list in its snapshot'})")
        starts = np.asarray(starts, dtype=np.int64)
        limits = np.asarray(limits, dtype=np.int64)
        return buf.slices(starts, limits), limits

    def describe(self):
        return f"opaque {self.serializer}"


# --- arrays -----------------------------------------------------------------------

@dataclass(frozen=True)
class Bytes(FlinkType):
    """byte[]: int length + bytes (BytePrimitiveArraySerializer)."""
    serializer: str = ""

    def arrow(self):
        return pa.binary()

    def read(self, r):
        n = r.int()
        return r.bytes(n)


@dataclass(frozen=True)
class PrimitiveArray(FlinkType):
    """long[], int[], ...: int length + fixed-width elements, no nulls."""
    element: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.list_(self.element.arrow())

    def read(self, r):
        n = r.int()
        return [self.element.read(r) for _ in range(n)]

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)
        if len(counts) and counts.min() < 0:
            raise FlinkFormatError(f"{buf.source}: negative array length")
        w = self.element.width
        offsets = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        elem_starts = np.repeat(starts + 4 - offsets[:-1] * w, counts) + np.arange(offsets[-1]) * w
        values, _ = self.element.column(buf, elem_starts)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values), starts + 4 + counts * w


# --- composites -------------------------------------------------------------------

def _expand(subset: pa.Array, present: np.ndarray) -> pa.Array:
    """*subset* (values of the rows where *present*) spread over all rows, null elsewhere."""
    if present.all():
        return subset
    idx = np.cumsum(present) - 1
    return subset.take(pa.array(idx, mask=~present))


def null_flagged(t: FlinkType, buf: Buf, starts: np.ndarray, limits=None) -> tuple[pa.Array, np.ndarray]:
    """A bool isNull flag, then the value when not null."""
    null = buf.gather(starts, 1)[:, 0] != 0
    present = ~null
    ends = starts + 1
    if present.any():
        sub_limits = None if limits is None else limits[present]
        values, sub_ends = t.column(buf, ends[present], sub_limits)
        ends[present] = sub_ends
    else:
        values = pa.nulls(0, t.arrow())
    return _expand(values, present), ends


@dataclass(frozen=True)
class Tuple(FlinkType):
    tuple_class: str
    fields: tuple[FlinkType, ...]
    serializer: str = ""

    @property
    def width(self):  # type: ignore[override]
        widths = [f.width for f in self.fields]
        return None if any(w is None for w in widths) else sum(widths)

    @property
    def names(self) -> list[str]:
        return [f"f{i}" for i in range(len(self.fields))]

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in zip(self.names, self.fields)])

    @property
    def decodable(self):
        return all(f.decodable for f in self.fields)

    def read(self, r):
        return {n: f.read(r) for n, f in zip(self.names, self.fields)}

    def from_matrix(self, m):
        arrays, at = [], 0
        for f in self.fields:
            arrays.append(f.from_matrix(m[:, at:at + f.width]))
            at += f.width
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow()))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return super().column(buf, starts)
        arrays, at = [], starts
        for i, f in enumerate(self.fields):
            last = i == len(self.fields) - 1
            a, at = f.column(buf, at, limits if last else None)
            arrays.append(a)
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow())), at

    def describe(self):
        return f"{self.tuple_class.rsplit('.', 1)[-1]}<{', '.join(f.describe() for f in self.fields)}>"


POJO_NULL, POJO_NO_SUBCLASS, POJO_SUBCLASS, POJO_TAGGED = 1, 2, 4, 8


@dataclass(frozen=True)
class Pojo(FlinkType):
    pojo_class: str
    fields: tuple[tuple[str, FlinkType], ...]
    subclasses: tuple[str, ...] = ()
    serializer: str = ""

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in self.fields])

    @property
    def decodable(self):
        return all(f.decodable for _, f in self.fields)

    def read(self, r):
        flags = r.ubyte()
        if flags & POJO_NULL:
            return None
        self._check_flags(flags, r.source)
        out = {}
        for name, f in self.fields:
            out[name] = None if r.bool() else f.read(r)
        return out

    def _check_flags(self, flags: int, source: str) -> None:
        if flags & (POJO_SUBCLASS | POJO_TAGGED):
            raise UnsupportedFlinkFeature(
                f"{source}: a value of a subclass of POJO {self.pojo_class} cannot be decoded "
                "(its fields are not in the snapshot)")

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        flags = buf.gather(starts, 1)[:, 0]
        if len(flags) and (flags & (POJO_SUBCLASS | POJO_TAGGED)).any():
            self._check_flags(int(flags[(flags & (POJO_SUBCLASS | POJO_TAGGED)) != 0][0]), buf.source)
        present = (flags & POJO_NULL) == 0
        at = starts[present] + 1
        arrays = []
        for name, f in self.fields:
            a, at = null_flagged(f, buf, at)
            arrays.append(a)
        ends = starts + 1
        ends[present] = at
        struct = pa.StructArray.from_arrays(arrays, fields=list(self.arrow())) if arrays else \
            pa.array([{}] * int(present.sum()), self.arrow())
        if present.all():
            return struct, ends
        mask = pa.array(~present)
        full = _expand(struct, present)
        return pa.StructArray.from_arrays(
            [full.field(i) for i in range(full.type.num_fields)], fields=list(self.arrow()), mask=mask), ends

    def describe(self):
        return f"POJO {self.pojo_class}"


@dataclass(frozen=True)
class Row(FlinkType):
    """Row (RowSerializer): a bitmask, most significant bit first, of the RowKind (2 bits,
    when the snapshot says rows carry it) and one null flag per field; then the non-null fields."""
    fields: tuple[tuple[str, FlinkType], ...]
    kind_bits: int = 2
    serializer: str = ""

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in self.fields])

    def read(self, r):
        n = len(self.fields)
        mask_bytes = r.bytes((n + self.kind_bits + 7) // 8)
        bits = int.from_bytes(mask_bytes, "big")
        total = len(mask_bytes) * 8
        out = {}
        for i, (name, f) in enumerate(self.fields):
            bit = total - 1 - (i + self.kind_bits)
            out[name] = None if (bits >> bit) & 1 else f.read(r)
        return out

    def describe(self):
        return "Row"


@dataclass(frozen=True)
class Nullable(FlinkType):
    inner: FlinkType
    padding: int = 0
    serializer: str = ""

    def arrow(self):
        return self.inner.arrow()

    @property
    def decodable(self):
        return self.inner.decodable

    def read(self, r):
        if r.bool():
            r.skip(self.padding)
            return None
        return self.inner.read(r)

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        values, ends = null_flagged(self.inner, buf, starts, limits)
        null = buf.gather(starts, 1)[:, 0] != 0
        ends[null] += self.padding
        return values, ends

    def describe(self):
        return self.inner.describe()


def decode_rounds(elem_cols, buf: Buf, starts: np.ndarray, counts: np.ndarray):
    """Decode *counts[i]* consecutive elements from each start, one element index at a time.

    *elem_cols(cursors)* decodes one element for every cursor and returns
    (arrays tuple, ends). Returns the per-element arrays in row order, the
    list offsets and each row's end.
    """
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    cursors = starts.copy()
    parts: list[tuple[pa.Array, ...]] = []
    perm = np.empty(total, dtype=np.int64)
    base = 0
    k = 0
    while True:
        active = np.nonzero(counts > k)[0]
        if not len(active):
            break
        arrays, ends = elem_cols(cursors[active])
        parts.append(arrays)
        perm[offsets[active] + k] = base + np.arange(len(active))
        base += len(active)
        cursors[active] = ends
        k += 1
    columns = []
    width = len(parts[0]) if parts else 0
    for j in range(width):
        chunked = pa.concat_arrays([p[j] for p in parts])
        columns.append(chunked.take(pa.array(perm)))
    return columns, offsets, cursors


def collection_sizes(buf: Buf, starts: np.ndarray) -> np.ndarray:
    counts = as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)
    if len(counts) and counts.min() < 0:
        raise FlinkFormatError(f"{buf.source}: negative collection size at offset "
                               f"{buf.base + int(starts[np.argmin(counts)])}")
    return counts


@dataclass(frozen=True)
class List(FlinkType):
    """ListSerializer, SetSerializer, GenericArraySerializer: int n + elements."""
    element: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.list_(self.element.arrow())

    @property
    def decodable(self):
        return self.element.decodable

    def read(self, r):
        return [self.element.read(r) for _ in range(r.int())]

    def skipper(self, buf):
        width = self.element.width
        if width is None:
            return super().skipper(buf)
        data, unpack = buf.data, struct.Struct(">i").unpack_from
        return lambda pos: pos + 4 + unpack(data, pos)[0] * width

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = collection_sizes(buf, starts)
        if self.element.width is not None:
            return PrimitiveArray(self.element).column(buf, starts)

        def one(cursors):
            a, e = self.element.column(buf, cursors)
            return (a,), e
        if not len(starts):
            return pa.array([], self.arrow()), starts
        cols, offsets, ends = decode_rounds(one, buf, starts + 4, counts)
        values = cols[0] if cols else pa.array([], self.element.arrow())
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values), ends

    def describe(self):
        return f"List<{self.element.describe()}>"


@dataclass(frozen=True)
class Map(FlinkType):
    """MapSerializer: int n × (key, bool isNull, value)."""
    key: FlinkType
    value: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.map_(self.key.arrow(), self.value.arrow())

    @property
    def decodable(self):
        return self.key.decodable and self.value.decodable

    def read(self, r):
        out = []
        for _ in range(r.int()):
            k = self.key.read(r)
            out.append((k, None if r.bool() else self.value.read(r)))
        return out

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = collection_sizes(buf, starts)

        def one(cursors):
            k, e = self.key.column(buf, cursors)
            v, e = null_flagged(self.value, buf, e)
            return (k, v), e
        if not len(starts):
            return pa.array([], self.arrow()), starts
        cols, offsets, ends = decode_rounds(one, buf, starts + 4, counts)
        if not cols:
            cols = [pa.array([], self.key.arrow()), pa.array([], self.value.arrow())]
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), cols[0], cols[1]), ends

    def describe(self):
        return f"Map<{self.key.describe()}, {self.value.describe()}>"


@dataclass(frozen=True)
class Either(FlinkType):
    left: FlinkType
    right: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.struct([("left", self.left.arrow()), ("right", self.right.arrow())])

    def read(self, r):
        if r.bool():
            return {"left": self.left.read(r), "right": None}
        return {"left": None, "right": self.right.read(r)}

    def describe(self):
        return f"Either<{self.left.describe()}, {self.right.describe()}>"


TTL_FIELD = "ttl_ts"


@dataclass(frozen=True)
class Ttl(FlinkType):
    """TtlSerializer: the last-access timestamp (epoch ms), then the user value."""
    inner: FlinkType
    serializer: str = ""

    @property
    def width(self):  # type: ignore[override]
        return None if self.inner.width is None else 8 + self.inner.width

    def arrow(self):
        return pa.struct([(TTL_FIELD, pa.int64()), ("value", self.inner.arrow())])

    @property
    def decodable(self):
        return self.inner.decodable

    def read(self, r):
        return {TTL_FIELD: r.long(), "value": self.inner.read(r)}

    def from_matrix(self, m):
        return pa.StructArray.from_arrays(
            [pa.array(as_dtype(m[:, :8], ">i8").astype("<i8")), self.inner.from_matrix(m[:, 8:])],
            fields=list(self.arrow()))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return super().column(buf, starts)
        ts = pa.array(as_dtype(buf.gather(starts, 8), ">i8").astype("<i8"))
        v, ends = self.inner.column(buf, starts + 8, limits)
        return pa.StructArray.from_arrays([ts, v], fields=list(self.arrow())), ends

    def describe(self):
        return f"TTL {self.inner.describe()}"


@dataclass(frozen=True)
class Timer(FlinkType):
    """TimerSerializer (heap timers): timestamp XOR Long.MIN_VALUE, key, namespace."""
    key: FlinkType
    namespace: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.struct([("timestamp", pa.int64()), ("key", self.key.arrow()),
                          ("namespace", self.namespace.arrow())])

    def read(self, r):
        return {"timestamp": r.long() ^ LONG_MIN, "key": self.key.read(r), "namespace": self.namespace.read(r)}

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        ts = pa.array(as_dtype(buf.gather(starts, 8), ">i8").astype("<i8") ^ np.int64(LONG_MIN))
        k, e = self.key.column(buf, starts + 8)
        ns, e = self.namespace.column(buf, e, limits)
        return pa.StructArray.from_arrays([ts, k, ns], fields=list(self.arrow())), e

    def describe(self):
        return "Timer"


def is_void(t: FlinkType) -> bool:
    return isinstance(t, VoidNamespace)
