"""Snappy-compressed Flink state: the framing of xerial's ``SnappyFramedOutputStream``.

With ``execution.checkpointing.snapshot-compression`` Flink writes each key group
of a keyed stream (and the elements of operator state) through xerial's
``SnappyFramedOutputStream``, which follows Snappy's framing format: a stream
identifier chunk ``ff 06 00 00 "sNaPpY"``, then chunks of one type byte, a
3-byte little-endian length and the body. Data chunks (``00`` compressed with raw
Snappy, ``01`` stored) start with the masked CRC32C of their uncompressed bytes
and hold at most 64 KiB of them. Types ``80``-``fe`` (``fe`` is padding) are
skipped; ``02``-``7f`` are reserved and cannot be skipped.

Raw Snappy comes from ``cramjam`` and CRC32C from ``google-crc32c`` (hardware
accelerated; a table-driven CRC in Python runs at about 5 MB/s).
"""

from __future__ import annotations

from typing import Iterator

import cramjam
import google_crc32c

from ..errors import FlinkFormatError

STREAM_IDENTIFIER = b"\xff\x06\x00\x00sNaPpY"
COMPRESSED, UNCOMPRESSED, PADDING, IDENTIFIER = 0x00, 0x01, 0xFE, 0xFF
MAX_CHUNK_DATA = 65536  # uncompressed bytes in one data chunk, as the framing format allows
_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data) -> int:
    """CRC32C of *data*, rotated right by 15 bits and offset, as the framing format stores it."""
    crc = google_crc32c.value(bytes(data))
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


class _Errors:
    def __init__(self, name: str, base_offset: int):
        self.name, self.base = name, base_offset

    def __call__(self, pos: int, problem: str) -> FlinkFormatError:
        return FlinkFormatError(f"{self.name}: snappy stream at byte {self.base + pos}: {problem}")


def iter_chunks(data, *, start: int = 0, end: int | None = None, identifier: bool = True,
                name: str = "snappy data", base_offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, uncompressed bytes)`` of every data chunk of ``data[start:end]``.

    *identifier*: the bytes must begin with the stream identifier (False to start
    at a chunk inside a stream, as operator-state offsets do). Errors name *name* and
    the offset plus *base_offset* (where *data* lies in its file)."""
    view = memoryview(data)
    end = len(view) if end is None else end
    error = _Errors(name, base_offset)
    pos = start
    if identifier:
        if bytes(view[pos:pos + len(STREAM_IDENTIFIER)]) != STREAM_IDENTIFIER:
            raise error(pos, "does not begin with the snappy stream identifier "
                             "ff 06 00 00 73 4e 61 50 70 59 (not compressed, or another codec)")
        pos += len(STREAM_IDENTIFIER)
    while pos < end:
        if end - pos < 4:
            raise error(pos, f"truncated chunk header ({end - pos} of 4 bytes)")
        kind = view[pos]
        length = int.from_bytes(view[pos + 1:pos + 4], "little")
        body_start, body_end = pos + 4, pos + 4 + length
        if body_end > end:
            raise error(pos, f"truncated chunk: type {kind:02x} needs {length} bytes, "
                             f"{end - body_start} left")
        body = view[body_start:body_end]
        if kind in (COMPRESSED, UNCOMPRESSED):
            if length < 4:
                raise error(pos, f"data chunk of {length} bytes has no room for its CRC")
            stored = int.from_bytes(body[:4], "little")
            payload = body[4:]
            if kind == COMPRESSED:
                payload = _decompress(payload, pos, error)
            elif len(payload) > MAX_CHUNK_DATA:
                raise error(pos, f"uncompressed chunk of {len(payload)} bytes exceeds "
                                 f"{MAX_CHUNK_DATA}")
            else:
                payload = bytes(payload)
            actual = masked_crc32c(payload)
            if actual != stored:
                raise error(pos, f"CRC mismatch (stored {stored:08x}, computed {actual:08x}): "
                                 "corrupt data")
            yield pos, payload
        elif kind == IDENTIFIER:
            if bytes(view[pos:body_end]) != STREAM_IDENTIFIER:
                raise error(pos, "malformed stream identifier chunk")
        elif kind < 0x80:
            raise error(pos, f"unknown unskippable chunk type {kind:02x}")
        # 0x80-0xfe: skippable (0xfe is padding)
        pos = body_end


def _decompress(payload, pos: int, error: _Errors) -> bytes:
    try:
        size = cramjam.snappy.decompress_raw_len(payload)
    except Exception as e:  # cramjam raises its own error types
        raise error(pos, f"corrupt compressed chunk: {e}") from None
    if size > MAX_CHUNK_DATA:
        raise error(pos, f"compressed chunk claims {size} bytes, more than {MAX_CHUNK_DATA}")
    try:
        return bytes(cramjam.snappy.decompress_raw(payload))
    except Exception as e:
        raise error(pos, f"corrupt compressed chunk: {e}") from None


def decompress_framed(data, *, start: int = 0, end: int | None = None, identifier: bool = True,
                      name: str = "snappy data", base_offset: int = 0) -> bytes:
    """The uncompressed bytes of the framed stream ``data[start:end]`` (see :func:`iter_chunks`)."""
    return b"".join(chunk for _, chunk in iter_chunks(
        data, start=start, end=end, identifier=identifier, name=name, base_offset=base_offset))
