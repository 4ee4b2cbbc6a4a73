"""Avro values written from rows (flink-avro's DataOutputEncoder, in the writer schema): hand-made
bytes of every kind decode and encode again to the same bytes, rows of any decimal round-trip
in as few bytes as Java's BigInteger, and rows the schema cannot hold are one error."""

from __future__ import annotations

import json
from decimal import Context, Decimal, localcontext

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.avro_encode import encode_avro
from statectl.statefmt.flink.avro_schema import avro_type
from support.avro_values import blocks, i32, i64, string

EVERY_KIND = {"type": "record", "name": "All", "namespace": "x", "fields": [
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "e2", "type": "E"},
    {"name": "u", "type": ["int", "string", "null"]},
    {"name": "u2", "type": ["string", "null"]},
    {"name": "one", "type": ["double"]},
    {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
    {"name": "d", "type": {"type": "fixed", "name": "D", "size": 4, "logicalType": "decimal", "precision": 9,
                           "scale": 1}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "E"}}},
    {"name": "flag", "type": "boolean"},
    {"name": "ratio", "type": "float"},
    {"name": "raw", "type": "bytes"},
    {"name": "n", "type": "null"}]}


def every_kind(e, e2, u, u2, one, f, d, t, day, tm, m, flag, ratio, raw) -> bytes:
    union = i32(2) if u is None else (i32(0) + i32(u) if isinstance(u, int) else i32(1) + string(u))
    out = i32(e) + i32(e2) + union + (i32(1) if u2 is None else i32(0) + string(u2))
    out += i32(0) + struct_double(one) + f + d + i64(t) + i32(day) + i32(tm)
    out += blocks([string(k) + blocks([i32(s) for s in v]) for k, v in m]) if m else b"\x00"
    return out + bytes([flag]) + np.array([ratio], ">f4").tobytes() + string(raw)


def struct_double(x: float) -> bytes:
    return np.array([x], ">f8").tobytes()


def column(t, values: list[bytes]) -> pa.Array:
    starts = np.cumsum([0] + [len(v) for v in values[:-1]]).astype(np.int64)
    limits = starts + np.array([len(v) for v in values], dtype=np.int64)
    got, ends = t.column(T.Buf(b"".join(values), "data"), starts, limits)
    assert ends.tolist() == limits.tolist()
    return got


def test_values_of_every_kind_encode_to_flinks_bytes():
    t = avro_type(json.dumps(EVERY_KIND))
    values = [
        every_kind(1, 0, 7, "s", 2.5, b"\x00\xff", b"\xff\xff\xff\x85", -5, 20000, 3600000,
                   [("k", [0, 1, 1]), ("é", [])], 1, -0.5, b"\x00\x01"),
        every_kind(0, 1, "text ü€", None, -0.0, b"ab", b"\x00\x00\x00\x00", 1750000000000000, -1, 0, [], 0, 3.25, b""),
        every_kind(0, 0, None, "", 1e300, b"zz", b"\x05\xf5\xe0\xff", 0, 0, 86399999, [("x", [1])], 1, 0.0, b"\xff"),
    ]
    assert encode_avro(t, column(t, values)).to_pylist() == values


def test_arrays_and_maps_in_several_blocks_are_written_as_one():
    """flink-avro writes one block per array; a value of several blocks reads the same again."""
    t = avro_type('{"type":"array","items":"long"}')
    values = [blocks([i64(1), i64(2)], [i64(3)]), blocks([]), blocks([i64(-1)])]
    again = encode_avro(t, column(t, values)).to_pylist()
    assert again == [blocks([i64(1), i64(2), i64(3)]), b"\x00", values[2]]
    assert column(t, again).to_pylist() == [[1, 2, 3], [], [-1]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.decimals(min_value=Decimal("-9.99e35"), max_value=Decimal("9.99e35"), places=2, allow_nan=False),
                min_size=1, max_size=20))
def test_decimals_round_trip_in_javas_fewest_bytes(decimals):
    t = avro_type('{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}')
    encoded = encode_avro(t, pa.array(decimals, pa.decimal128(38, 2))).to_pylist()
    for d, data in zip(decimals, encoded):
        with localcontext(Context(prec=60)):
            unscaled = int(d.scaleb(2))
        fewest = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1  # BigInteger.toByteArray's
        assert data == fewest.to_bytes(4, "big") + unscaled.to_bytes(fewest, "big", signed=True)
    assert column(t, encoded).to_pylist() == decimals


@pytest.mark.parametrize("row, message", [
    ({"e": None}, r"value\.e: row 0 is null, which the Avro schema's enum x\.E cannot hold \(it has no null "
                  r"branch there\)"),
    ({"e": "C"}, r"value\.e: row 0 holds 'C', not a symbol of Avro enum x\.E \(A, B\)"),
    ({"u": {"int": 1, "string": "two"}}, r"value\.u: row 0 sets 2 branches of Avro union \[int, string, null\]; "
                                         r"exactly one is written"),
    ({"f": b"abc"}, r"value\.f: row 0 holds 3 bytes, Avro fixed x\.F holds 2"),
    ({"one": None}, r"value\.one: row 0 is null, which the Avro schema's union \[double\] cannot hold"),
])
def test_rows_the_schema_cannot_hold_are_one_error(row, message):
    t = avro_type(json.dumps(EVERY_KIND))
    good = column(t, [every_kind(1, 0, 7, "s", 2.5, b"\x00\xff", b"\xff\xff\xff\x85", -5, 20000, 3600000, [], 1,
                                 -0.5, b"")]).to_pylist()[0]
    with pytest.raises(FlinkEncodeError, match=message):
        encode_avro(t, pa.array([{**good, **row}], t.arrow()))
