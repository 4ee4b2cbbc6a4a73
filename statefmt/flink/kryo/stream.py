"""Kryo's byte-level encodings: varints, flagged varints, its two string forms, fixed-width numbers.

Kryo 5 (Flink 2.x) writes fixed-width numbers little-endian, Kryo 2 (Flink 1.x) big-endian;
everything else here is the same in both.
"""

from __future__ import annotations

import struct

from ...errors import FlinkFormatError
from ...varint import VarintError, read_varint


class KryoDataError(FlinkFormatError):
    """A Kryo value is damaged or holds what its class table cannot name."""


class KryoIn:
    """A cursor over one value's bytes; every read is bounds-checked."""

    __slots__ = ("data", "pos", "end", "little")

    def __init__(self, data, pos: int, end: int, little: bool):
        self.data, self.pos, self.end, self.little = data, pos, end, little

    def _need(self, n: int) -> int:
        at = self.pos
        if at + n > self.end:
            raise KryoDataError(f"value ends early (needs {n} more byte(s) at {at})")
        self.pos = at + n
        return at

    def byte(self) -> int:
        return self.data[self._need(1)]

    def signed_byte(self) -> int:
        b = self.byte()
        return b - 256 if b > 127 else b

    def fixed(self, fmt: str):
        size = struct.calcsize(fmt)
        at = self._need(size)
        return struct.unpack_from(("<" if self.little else ">") + fmt, self.data, at)[0]

    def varint(self, positive: bool = True) -> int:
        return _unsign(self._groups(28) & 0xFFFFFFFF, 32, positive)

    def _groups(self, max_shift: int) -> int:
        """Base-128 groups, low first (the project's one varint reader), at most to *max_shift*."""
        try:
            result, self.pos = read_varint(self.data, self.pos, self.end, max_shift)
        except VarintError as e:
            raise KryoDataError(f"{e} (at {e.at})") from None
        return result

    def varlong(self, positive: bool = True) -> int:
        result, shift = 0, 0
        for i in range(9):
            b = self.byte()
            if i == 8:
                result |= b << 56
                break
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        result &= 0xFFFFFFFFFFFFFFFF
        return _unsign(result, 64, positive)

    def varint_flag(self) -> tuple[bool, int]:
        """Kryo 5's varint with a flag in the first byte's top bit (6 value bits there; the
        byte's next bit says more groups follow, as in a plain varint)."""
        b = self.byte()
        flag, result = bool(b & 0x80), b & 0x3F
        if b & 0x40:
            result |= self._groups(21) << 6
        return flag, result & 0xFFFFFFFF

    def string(self) -> str | None:
        """An ASCII run ending with its top bit set, or a flagged UTF-8 length (0 null, 1 empty)."""
        first = self.data[self.pos] if self.pos < self.end else None
        if first is None:
            raise KryoDataError(f"value ends early (a string at {self.pos})")
        if not first & 0x80:
            start = self.pos
            while True:
                if self.byte() & 0x80:
                    break
            raw = bytearray(self.data[start:self.pos])
            raw[-1] &= 0x7F
            return raw.decode("latin-1")
        _, count = self.varint_flag()
        if count == 0:
            return None
        if count == 1:
            return ""
        return self._utf8_chars(count - 1)

    def _utf8_chars(self, count: int) -> str:
        units = []
        for _ in range(count):
            b = self.byte()
            top = b >> 4
            if top < 8:
                units.append(b)
            elif top in (12, 13):
                units.append(((b & 0x1F) << 6) | (self.byte() & 0x3F))
            elif top == 14:
                b2, b3 = self.byte(), self.byte()
                units.append(((b & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F))
            else:
                raise KryoDataError(f"bad UTF-8 byte {b:#x} at {self.pos - 1}")
        return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")

    def raw(self, n: int) -> bytes:
        if n < 0:
            raise KryoDataError(f"negative length {n} at {self.pos}")
        at = self._need(n)
        return bytes(self.data[at:at + n])


def _unsign(value: int, bits: int, positive: bool) -> int:
    if not positive:
        return (value >> 1) ^ -(value & 1)
    return value - (1 << bits) if value >> (bits - 1) else value
