"""Serializer snapshots the dev fixtures lack, and their columnar decoding, against bytes
written here the way Flink's serializers write them."""

from __future__ import annotations

import datetime
import struct

import numpy as np
import pyarrow as pa
import pytest

from statectl.statefmt.errors import UnsupportedFlinkFeature
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.serializers import read_snapshot, read_top_snapshot

B = "org.apache.flink.api.common.typeutils.base."
J = "org.apache.flink.api.java.typeutils.runtime."


def utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def simple(cls: str) -> bytes:
    return utf(cls) + i32(3)


def composite(cls: str, outer_version: int, outer: bytes, *nested: bytes) -> bytes:
    return (utf(cls) + i32(3) + i32(911108) + i32(outer_version) + outer + i32(1333245) + i32(1)
            + i32(len(nested)) + b"".join(nested))


def sv(s: str | None) -> bytes:
    """StringValue of an ASCII string."""
    return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()


LONG = simple(B + "LongSerializer$LongSerializerSnapshot")
INT = simple(B + "IntSerializer$IntSerializerSnapshot")
STRING = simple(B + "StringSerializer$StringSerializerSnapshot")


def decode(snapshot: bytes, values: list[bytes], limits: bool = False) -> list:
    t = read_snapshot(Reader(snapshot, "snap"))
    data = b"".join(values)
    starts = np.cumsum([0] + [len(v) for v in values[:-1]])
    ends = starts + np.array([len(v) for v in values])
    col, got_ends = t.column(T.Buf(data, "data"), starts, ends if limits else None)
    assert got_ends.tolist() == ends.tolist()
    return col.to_pylist()


def test_fixed_width_scalars_numpy_path():
    for name, fmt, vals in [("Long", ">q", [0, -1, 2**63 - 1, -2**63]), ("Int", ">i", [5, -7]),
                            ("Short", ">h", [-3, 300]), ("Byte", ">b", [-128, 127]),
                            ("Double", ">d", [1.5, -0.1]), ("Float", ">f", [0.25, -2.0])]:
        snap = simple(f"{B}{name}Serializer${name}SerializerSnapshot")
        assert decode(snap, [struct.pack(fmt, v) for v in vals]) == vals
    assert decode(simple(B + "BooleanSerializer$BooleanSerializerSnapshot"), [b"\x01", b"\x00"]) == [True, False]
    assert decode(simple(B + "CharSerializer$CharSerializerSnapshot"), [b"\x00A", b"\x20\xac"]) == ["A", "€"]


def test_enum():
    snap = utf(B + "EnumSerializer$EnumSerializerSnapshot") + i32(3) + utf("x.Color") + i32(3) + \
        utf("RED") + utf("GREEN") + utf("BLUE")
    assert decode(snap, [i32(2), i32(0)]) == ["BLUE", "RED"]


def test_big_numbers():
    big = simple(B + "BigIntSerializer$BigIntSerializerSnapshot")
    n = -(2**70) + 5
    raw = n.to_bytes(10, "big", signed=True)
    assert decode(big, [i32(0), i32(1), i32(2), i32(3), i32(len(raw) + 4) + raw]) == \
        [None, "0", "1", "10", str(n)]
    dec = simple(B + "BigDecSerializer$BigDecSerializerSnapshot")
    assert decode(dec, [i32(0), i32(5) + b"\x7b" + i32(2), i32(2) + i32(0)]) == [None, "1.23", "1"]


def test_time_types():
    inst = simple(B + "InstantSerializer$InstantSerializerSnapshot")
    t = read_snapshot(Reader(inst, "s"))
    col, _ = t.column(T.Buf(i64(1) + i32(5) + i64(-2**63) + i32(-2**31), "d"), np.array([0, 12]))
    assert col.cast(pa.int64()).to_pylist() == [1_000_000_005, None]
    ts = read_snapshot(Reader(simple(B + "SqlTimestampSerializer$SqlTimestampSerializerSnapshot"), "s"))
    col, _ = ts.column(T.Buf(i64(1500) + i32(500_000_123), "d"), np.array([0]))
    assert col.cast(pa.int64()).to_pylist() == [1_500_000_123]
    date = simple(B + "DateSerializer$DateSerializerSnapshot")
    t = read_snapshot(Reader(date, "s"))
    col, _ = t.column(T.Buf(i64(86_400_000) + i64(-2**63), "d"), np.array([0, 8]))
    assert col.cast(pa.int64()).to_pylist() == [86_400_000, None]
    ld = simple(B + "LocalDateSerializer$LocalDateSerializerSnapshot")
    assert decode(ld, [i32(2024) + b"\x02\x1d", i32(-2**31) + b"\x80\x00"]) == [datetime.date(2024, 2, 29), None]
    lt = simple(B + "LocalTimeSerializer$LocalTimeSerializerSnapshot")
    assert decode(lt, [b"\x01\x02\x03" + i32(4)]) == [datetime.time(1, 2, 3)]
    ldt = read_snapshot(Reader(simple(B + "LocalDateTimeSerializer$LocalDateTimeSerializerSnapshot"), "s"))
    col, _ = ldt.column(T.Buf(i32(1970) + b"\x01\x02" + b"\x00\x00\x01" + i32(7), "d"), np.array([0]))
    assert col.cast(pa.int64()).to_pylist() == [86_400_000_000_000 + 1_000_000_007]


def test_arrays():
    arr = "org.apache.flink.api.common.typeutils.base.array."
    longs = simple(arr + "LongPrimitiveArraySerializer$LongPrimitiveArraySerializerSnapshot")
    assert decode(longs, [i32(2) + i64(1) + i64(-2), i32(0), i32(1) + i64(9)]) == [[1, -2], [], [9]]
    byts = simple(arr + "BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot")
    assert decode(byts, [i32(3) + b"abc", i32(0)]) == [b"abc", b""]
    strs = simple(arr + "StringArraySerializer$StringArraySerializerSnapshot")
    assert decode(strs, [i32(2) + sv("a") + sv(None), i32(0)]) == [["a", None], []]


def test_collections_and_nullable():
    lst = composite(B + "ListSerializerSnapshot", 1, b"", STRING)
    assert decode(lst, [i32(3) + sv("x") + sv("yy") + sv("z"), i32(0), i32(1) + sv("w")]) == \
        [["x", "yy", "z"], [], ["w"]]
    mp = composite(B + "MapSerializerSnapshot", 1, b"", STRING, LONG)
    assert decode(mp, [i32(2) + sv("a") + b"\x00" + i64(1) + sv("b") + b"\x01", i32(0)]) == \
        [[("a", 1), ("b", None)], []]
    nullable = composite(J + "NullableSerializer$NullableSerializerSnapshot", 2, i32(0), lst)
    assert decode(nullable, [b"\x01", b"\x00" + i32(1) + sv("q")]) == [None, ["q"]]
    padded = composite(J + "NullableSerializer$NullableSerializerSnapshot", 2, i32(8), LONG)
    assert decode(padded, [b"\x01" + bytes(8), b"\x00" + i64(4)]) == [None, 4]
    either = composite(J + "JavaEitherSerializerSnapshot", 1, b"", LONG, STRING)
    assert decode(either, [b"\x01" + i64(3), b"\x00" + sv("r")]) == \
        [{"left": 3, "right": None}, {"left": None, "right": "r"}]


def test_tuple_fixed_and_variable():
    fixed = composite(J + "TupleSerializerSnapshot", 2, utf("org.apache.flink.api.java.tuple.Tuple2"), LONG, INT)
    t = read_snapshot(Reader(fixed, "s"))
    assert t.width == 12
    assert decode(fixed, [i64(1) + i32(2), i64(-3) + i32(4)]) == [{"f0": 1, "f1": 2}, {"f0": -3, "f1": 4}]
    var = composite(J + "TupleSerializerSnapshot", 2, utf("org.apache.flink.api.java.tuple.Tuple2"), STRING, LONG)
    assert decode(var, [sv("ab") + i64(7)]) == [{"f0": "ab", "f1": 7}]


def pojo_snapshot(fields: list[tuple[str, bytes]]) -> bytes:
    def framed(b: bytes) -> bytes:
        return i32(len(b)) + b
    out = utf(J + "PojoSerializerSnapshot") + i32(2) + utf("x.P") + i64(0x4F2C69A3D70) + i32(len(fields))
    for name, snap in fields:
        out += utf(name) + b"\x01" + framed(utf("x.P") + utf(name)) + b"\x01" + framed(snap)
    return out + (i64(0x4F2C69A3D70) + i32(0)) * 2


def test_pojo_nulls():
    snap = pojo_snapshot([("a", INT), ("b", STRING)])
    values = [b"\x02" + b"\x00" + i32(1) + b"\x00" + sv("s"), b"\x01", b"\x02" + b"\x00" + i32(2) + b"\x01"]
    assert decode(snap, values) == [{"a": 1, "b": "s"}, None, {"a": 2, "b": None}]
    with pytest.raises(UnsupportedFlinkFeature) as e:
        decode(snap, [b"\x04" + utf("x.Sub")])
    assert str(e.value) == ("data: a value of a subclass of POJO x.P cannot be decoded "
                            "(its fields are not in the snapshot)")


def test_row_with_row_kind():
    snap = composite(J + "RowSerializer$RowSerializerSnapshot", 4, b"\x01", LONG, STRING)
    # mask bits (MSB first): 2 RowKind bits, then null flags: f1 null
    assert decode(snap, [bytes([0b00010000]) + i64(5), bytes([0]) + i64(6) + sv("t")]) == \
        [{"f0": 5, "f1": None}, {"f0": 6, "f1": "t"}]


def kryo_snapshot() -> bytes:
    empty = i64(0x4F2C69A3D70) + i32(0)
    return utf("org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot") + i32(2) + \
        utf("x.NotPojo") + empty * 3


def test_kryo_is_opaque_where_it_can_be_delimited():
    t = read_snapshot(Reader(kryo_snapshot(), "s"))
    assert isinstance(t, T.Opaque) and t.arrow() == pa.binary()
    assert decode(kryo_snapshot(), [b"\x57\x01\x54", b"\x01"], limits=True) == [b"\x57\x01\x54", b"\x01"]
    with pytest.raises(UnsupportedFlinkFeature) as e:
        decode(kryo_snapshot(), [b"\x57"])
    assert str(e.value) == ("data: values of org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer "
                            "cannot be delimited (Kryo, type x.NotPojo)")
    lst = composite(B + "ListSerializerSnapshot", 1, b"", kryo_snapshot())
    assert isinstance(read_snapshot(Reader(lst, "s")), T.Opaque)


def test_unknown_snapshot_names_its_class():
    data = i32(2) + simple("com.example.MySerializerSnapshot")
    with pytest.raises(UnsupportedFlinkFeature) as e:
        read_top_snapshot(Reader(data, "hdr"))
    assert str(e.value) == ("hdr: serializer snapshot com.example.MySerializerSnapshot (version 3) at offset 4 "
                            "is not known")


def test_pojo_field_with_unknown_serializer_makes_the_pojo_opaque():
    snap = pojo_snapshot([("a", INT), ("b", simple("com.example.X$Snapshot"))])
    t = read_snapshot(Reader(snap, "s"))
    assert isinstance(t, T.Opaque) and "x.P" in t.reason


def test_keys_of_rows_with_namespaces_of_two_types():
    """A window operator's per-window and global state: the namespace column keeps the bytes."""
    from statectl.statefmt.flink.headers import StateMeta
    from statectl.statefmt.flink.streams import StateRows
    from statectl.statefmt.flink.tables import keyed_schema, keyed_table
    from statectl.statefmt.flink.types.buffer import Extents
    key = read_snapshot(Reader(STRING, "s"))
    window = T.TimeWindow("TimeWindow$Serializer")
    void = T.VoidNamespace("VoidNamespaceSerializer")
    long_ = read_snapshot(Reader(LONG, "s"))
    states = (StateMeta("per_window", "value", long_, window), StateMeta("global", "value", long_, void))
    schema = keyed_schema(key, states)
    assert schema.field("namespace").type == pa.binary()
    ns = i64(0) + i64(10)
    rows = {
        "per_window": StateRows(np.array([5], np.int32), Extents.of(pa.array([sv("k") + ns]), "t"), pa.array([1])),
        "global": StateRows(np.array([5], np.int32), Extents.of(pa.array([sv("k") + b"\x00"]), "t"), pa.array([2])),
    }
    assert keyed_table(key, states, rows, schema, "t").to_pylist() == [
        {"_key_group": 5, "key": "k", "namespace": ns, "per_window": 1, "global": None},
        {"_key_group": 5, "key": "k", "namespace": b"\x00", "per_window": None, "global": 2},
    ]


def string_value(s: str | None) -> bytes:
    """Flink's StringValue, written independently of the reader: varint(len + 1), varint per UTF-16 unit."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))
    if s is None:
        return b"\x00"
    raw = s.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]
    return varint(len(units) + 1) + b"".join(varint(u) for u in units)


from hypothesis import given, settings, strategies as st  # noqa: E402

_texts = st.one_of(st.none(), st.text(max_size=5), st.text(alphabet="abc", min_size=120, max_size=140),
                   st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8))


@settings(max_examples=60)
@given(st.lists(_texts, max_size=30))
def test_string_columns_fast_and_slow_paths_agree(values):
    """ASCII short strings take the vectorised path, the others the per-value one: same result."""
    t = read_snapshot(Reader(STRING, "s"))
    encoded = [string_value(v) for v in values]
    data = b"".join(encoded)
    starts = np.cumsum([0] + [len(e) for e in encoded[:-1]]).astype(np.int64) if values else np.zeros(0, np.int64)
    col, ends = t.column(T.Buf(data, "d"), starts)
    assert col.to_pylist() == values
    assert ends.tolist() == (starts + [len(e) for e in encoded]).tolist()
    skip = t.skipper(T.Buf(data, "d"))
    assert [skip(int(s)) for s in starts] == ends.tolist()


@settings(max_examples=40)
@given(st.lists(st.tuples(st.lists(st.integers(-2**63, 2**63 - 1), max_size=4),
                          st.lists(st.tuples(_texts.filter(lambda x: x is not None), st.one_of(st.none(), st.integers(-5, 5))),
                                   max_size=3)), max_size=12))
def test_list_and_map_columns_match_value_by_value(rows):
    lst = read_snapshot(Reader(composite(B + "ListSerializerSnapshot", 1, b"", LONG), "s"))
    mp = read_snapshot(Reader(composite(B + "MapSerializerSnapshot", 1, b"", STRING, LONG), "s"))
    encoded = []
    for longs, entries in rows:
        e = i32(len(longs)) + b"".join(i64(v) for v in longs) + i32(len(entries))
        for k, v in entries:
            e += string_value(k) + (b"\x01" if v is None else b"\x00" + i64(v))
        encoded.append(e)
    buf = T.Buf(b"".join(encoded), "d")
    starts = np.cumsum([0] + [len(e) for e in encoded[:-1]]).astype(np.int64) if rows else np.zeros(0, np.int64)
    longs_col, ends = lst.column(buf, starts)
    maps_col, ends2 = mp.column(buf, ends)
    assert longs_col.to_pylist() == [r[0] for r in rows]
    assert maps_col.to_pylist() == [list(r[1]) for r in rows]
    assert ends2.tolist() == (starts + [len(e) for e in encoded]).tolist()
