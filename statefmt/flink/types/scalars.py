"""Flink's single values: numbers, characters, strings, big numbers, enums, namespaces, opaque bytes."""

from __future__ import annotations

import decimal
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import FlinkFormatError, UnsupportedFlinkFeature
from ...jit import numba_started
from ..binary import Reader, utf16_units_to_str
from .base import FlinkType
from .buffer import as_dtype


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
        """ASCII strings shorter than 127 characters (one length byte) without a Python loop:
        compiled once numba runs in this process, else by numpy."""
        starts = np.asarray(starts, dtype=np.int64)
        if not len(starts):
            return pa.array([], pa.string()), starts
        if numba_started() and int(starts.min()) >= 0 and int(starts.max()) < len(buf.data):
            from ..stringkernels import short_ascii_strings

            found = short_ascii_strings(buf.arr, starts)
            return found if found is not None else super().column(buf, starts, limits)
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
            import pyarrow.compute as pc  # here, not at the top: loading a savepoint needs none of it

            strings = pc.if_else(pa.array(null), pa.scalar(None, pa.string()), strings)
        return strings, ends

    def describe(self):
        return "String"


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


@dataclass(frozen=True)
class Bytes(FlinkType):
    """byte[]: int length + bytes (BytePrimitiveArraySerializer)."""
    serializer: str = ""

    def arrow(self):
        return pa.binary()

    def read(self, r):
        n = r.int()
        return r.bytes(n)


def is_void(t: FlinkType) -> bool:
    return isinstance(t, VoidNamespace)
