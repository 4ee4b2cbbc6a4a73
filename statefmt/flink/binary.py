"""Big-endian reads over bytes, as Java's DataInputStream writes them.

Every read is bounds-checked: running off the end raises one
:class:`FlinkFormatError` naming the source and the offset.
"""

from __future__ import annotations

import struct

from ..errors import FlinkFormatError
from ..varint import VarintError, read_varint

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_F64 = struct.Struct(">d")
_F32 = struct.Struct(">f")


def decode_modified_utf8(data: bytes, source: str = "<bytes>", offset: int = 0) -> str:
    """Java's modified UTF-8 (NUL as C0 80, supplementary characters as surrogate pairs)."""
    try:
        return data.decode("utf-8")  # the common case: no NUL, no supplementary characters
    except UnicodeDecodeError:
        return _decode_slow(data, source, offset)


def _decode_slow(data: bytes, source: str, offset: int) -> str:
    units: list[int] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b & 0xE0 == 0xC0 and i + 1 < n and data[i + 1] & 0xC0 == 0x80:
            units.append(((b & 0x1F) << 6) | (data[i + 1] & 0x3F))
            i += 2
        elif b & 0xF0 == 0xE0 and i + 2 < n and data[i + 1] & 0xC0 == 0x80 and data[i + 2] & 0xC0 == 0x80:
            units.append(((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F))
            i += 3
        else:
            raise FlinkFormatError(f"{source}: bad modified UTF-8 at offset {offset + i}")
    return utf16_units_to_str(units)


def utf16_units_to_str(units: list[int]) -> str:
    """Java chars (UTF-16 code units) to a Python string; pairs join, lone surrogates stay."""
    raw = b"".join(u.to_bytes(2, "little") for u in units)
    return raw.decode("utf-16-le", "surrogatepass")


class Reader:
    """A cursor over *data*; *source* names the file in errors, *base* is its offset there."""

    __slots__ = ("data", "pos", "end", "source", "base")

    def __init__(self, data: bytes | memoryview, source: str, pos: int = 0,
                 end: int | None = None, base: int = 0):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.source = source
        self.base = base

    def error(self, what: str, at: int | None = None) -> FlinkFormatError:
        where = self.base + (self.pos if at is None else at)
        return FlinkFormatError(f"{self.source}: {what} at offset {where}")

    def _take(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise self.error(f"ends early: {n} more byte(s) needed, {max(self.end - pos, 0)} left", pos)
        self.pos = pos + n
        return pos

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def bytes(self, n: int) -> bytes:
        p = self._take(n)
        return bytes(self.data[p:p + n])

    def skip(self, n: int) -> None:
        self._take(n)

    def byte(self) -> int:
        """A signed byte."""
        b = self.data[self._take(1)]
        return b - 256 if b > 127 else b

    def ubyte(self) -> int:
        return self.data[self._take(1)]

    # The reads a stream header makes thousands of times take their bytes inline (no _take call):
    # `info` of a savepoint parses one header per subtask stream.

    def bool(self) -> bool:
        pos = self.pos
        if pos + 1 > self.end:
            self._take(1)  # raises
        self.pos = pos + 1
        return self.data[pos] != 0

    def short(self) -> int:
        return _I16.unpack_from(self.data, self._take(2))[0]

    def ushort(self) -> int:
        return _U16.unpack_from(self.data, self._take(2))[0]

    def int(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self._take(4)  # raises
        self.pos = pos + 4
        return _I32.unpack_from(self.data, pos)[0]

    def long(self) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            self._take(8)  # raises
        self.pos = pos + 8
        return _I64.unpack_from(self.data, pos)[0]

    def double(self) -> float:
        return _F64.unpack_from(self.data, self._take(8))[0]

    def float(self) -> float:
        return _F32.unpack_from(self.data, self._take(4))[0]

    def utf(self) -> str:
        """`DataInput.readUTF`: a u16 length, then modified UTF-8."""
        data, p, end = self.data, self.pos + 2, self.end
        if p > end:
            self._take(2)  # raises
        n = (data[p - 2] << 8) | data[p - 1]
        if p + n > end:
            self.pos = p
            self._take(n)  # raises
        self.pos = p + n
        try:
            return str(data[p:p + n], "utf-8")  # the common case: no NUL, no supplementary characters
        except UnicodeDecodeError:
            return _decode_slow(bytes(data[p:p + n]), self.source, self.base + p)

    def varint(self) -> int:
        """An unsigned little-endian base-128 varint (Flink's StringValue lengths and chars)."""
        try:
            value, self.pos = read_varint(self.data, self.pos, self.end, max_shift=35)
        except VarintError as e:
            raise self.error(str(e), e.at) from None
        return value

    def string_value(self) -> str | None:
        """Flink's `StringValue`: varint(length + 1) (0 = null), then one varint per UTF-16 unit."""
        n = self.varint()
        if n == 0:
            return None
        n -= 1
        data, pos, end = self.data, self.pos, self.end
        # Fast path: all ASCII.
        if pos + n <= end:
            chunk = bytes(data[pos:pos + n])
            if chunk.isascii():
                self.pos = pos + n
                return chunk.decode("ascii")
        if n > end - pos:  # every unit takes at least one byte: checked before anything is allocated
            raise self.error(f"string of {n} characters runs past the end ({end - pos} bytes left)", pos)
        units = [0] * n
        for i in range(n):
            units[i] = self.varint()
            if units[i] > 0xFFFF:
                raise self.error(f"character {units[i]:#x} is not a UTF-16 unit")
        return utf16_units_to_str(units)
