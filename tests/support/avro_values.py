"""Avro values for the Avro tests: flink-avro's DataOutputEncoder bytes made by hand, and the
plain JSON form of a decoded value that the avro fixtures' expected.json uses."""

from __future__ import annotations

import datetime
import struct


def varint(n: int) -> bytes:
    """An unsigned base-128 varint, low 7 bits first (DataOutputEncoder.writeVarLongCount)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return i32(len(raw)) + raw


def blocks(*items: list[bytes]) -> bytes:
    """An array or map written as the given blocks of encoded items, then the 0 count."""
    return b"".join(varint(len(b)) + b"".join(b) for b in items if b) + b"\x00"


def java_utf(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">H", len(raw)) + raw


def string_value(s: str) -> bytes:
    """Flink's StringValue (ASCII here): varint(length + 1), one byte per character."""
    return varint(len(s) + 1) + s.encode("ascii")


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def plain(schema, value, named=None):
    """*value* (as Arrow's to_pylist gives it) in expected.json's form, following the writer
    *schema* (parsed JSON): unions as the branch's value, bytes and fixed as hex, decimals as
    strings, timestamp-millis as epoch ms, dates as days, maps as dicts with sorted keys."""
    named = {} if named is None else named
    if isinstance(schema, str):
        schema = named.get(schema, schema)
    if isinstance(schema, list):
        others = [b for b in schema if b != "null"]
        if value is None:
            return None
        if len(others) == 1:
            return plain(others[0], value, named)
        [(branch, v)] = [(b, v) for b, v in zip(others, value.values()) if v is not None]
        return plain(branch, v, named)
    kind = schema if isinstance(schema, str) else schema["type"]
    logical = schema.get("logicalType") if isinstance(schema, dict) else None
    if kind == "record":
        named[schema["name"]] = schema
        return {f["name"]: plain(f["type"], value[f["name"]], named) for f in schema["fields"]}
    if kind == "array":
        return [plain(schema["items"], v, named) for v in value]
    if kind == "map":
        return {k: plain(schema["values"], v, named) for k, v in sorted(value)}
    if logical == "decimal":
        return str(value)
    if logical == "timestamp-millis":
        if value.tzinfo is None:  # Spark's collect: the instant in this process's local time
            value = value.astimezone(datetime.timezone.utc)
        return (value - EPOCH) // datetime.timedelta(milliseconds=1)
    if logical == "date":
        return (value - datetime.date(1970, 1, 1)).days
    if kind in ("bytes", "fixed"):
        return value.hex()
    return value
