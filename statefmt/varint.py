"""The one reader of unsigned little-endian base-128 varints (LEB128), for every format.

statectl's value codec, RocksDB's SST blocks and Flink's ``StringValue`` all
count lengths this way. Each caller turns a :class:`VarintError` into its own
format's error. (The compiled SST walk keeps an njit copy in
:mod:`.rocksdb.sstkernels`: nopython code cannot call this one.)
"""

from __future__ import annotations


class VarintError(ValueError):
    """A varint that runs past its bytes, or past the widest one allowed; *at* is where."""

    def __init__(self, message: str, at: int):
        super().__init__(message)
        self.at = at


def read_varint(data, pos: int, end: int | None = None, max_shift: int = 63) -> tuple[int, int]:
    """(value, next position) of the varint at *pos* in ``data[:end]``; at most
    ``max_shift // 7 + 1`` bytes long (63: a 64-bit value)."""
    end = len(data) if end is None else end
    result = shift = 0
    while True:
        if pos >= end:
            raise VarintError("ends early inside a variable-length number", pos)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > max_shift:
            raise VarintError("variable-length number too long", pos)
