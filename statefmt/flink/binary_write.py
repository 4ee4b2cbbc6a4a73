"""Big-endian writes, as Java's DataOutputStream makes them: the inverse of `binary.Reader`."""

from __future__ import annotations

import struct

from ..errors import FlinkFormatError

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (`DataOutput.writeUTF` without the length): NUL as C0 80,
    characters beyond U+FFFF as two 3-byte surrogates, lone surrogates kept."""
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")
    raw = text.encode("utf-16-be", "surrogatepass")
    out = bytearray()
    for (unit,) in struct.iter_unpack(">H", raw):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    return bytes(out)


class Writer:
    """Appends Java-encoded values to a buffer; :meth:`getvalue` returns the bytes."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def bytes(self, data: bytes) -> None:
        self.buf += data

    def ubyte(self, value: int) -> None:
        self.buf.append(value)

    def bool(self, value: bool) -> None:
        self.buf.append(1 if value else 0)

    def int(self, value: int) -> None:
        self.buf += _I32.pack(value)

    def long(self, value: int) -> None:
        self.buf += _I64.pack(value)

    def longs(self, values) -> None:
        self.buf += struct.pack(f">{len(values)}q", *values)

    def utf(self, text: str) -> None:
        """`DataOutput.writeUTF`: a u16 length, then modified UTF-8 (at most 65535 bytes)."""
        data = encode_modified_utf8(text)
        if len(data) > 0xFFFF:
            raise FlinkFormatError(
                f"a string of {len(data)} bytes in modified UTF-8 cannot be written (Java's limit is 65535): "
                f"{text[:40]!r}...")
        self.buf += _U16.pack(len(data))
        self.buf += data
