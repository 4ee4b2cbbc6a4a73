"""Writing Flink's bytes: every value type encodes to what the reader decodes back (hypothesis, per
type, through the columnar decoders of `statefmt.flink.types`); serializer snapshots and stream
headers are byte-identical to every canonical header Flink wrote in the dev fixtures and the job's
2.3 savepoints; type bindings name every serializer the writer takes and come back from their text;
wrong values and bindings are one clear line."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.bytecolumns import parts_of, scattered, varints
from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import derive_type, key_java_type, parse_type, type_text
from statectl.statefmt.flink.encode import encode, string_values
from statectl.statefmt.flink.handles import KeyGroupsStream
from statectl.statefmt.flink.headers import read_keyed_header, read_operator_header
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.flink.snapshot_write import keyed_header, operator_header
from statectl.statefmt.flink.types import Buf
from support.flink_expect import FIXTURE_NAMES, FIXTURES
from support.flink_shapes import HASHMAP_CANONICAL, SHAPES


def decoded(t: T.FlinkType, values: pa.Array) -> pa.Array:
    """*values* encoded with *t*, then decoded by the reader; every value must end where the next
    starts, both as decoded and as skipped (the heap-native walk, whose entries have no lengths)."""
    data, offsets = parts_of(encode(t, values))
    buf = Buf(data.tobytes(), "encoded")
    got, ends = t.column(buf, offsets[:-1], offsets[1:])
    assert ends.tolist() == offsets[1:].tolist()
    skip = t.skipper(buf)
    assert [skip(int(start)) for start in offsets[:-1]] == offsets[1:].tolist()
    return got


def text(s: str):
    return parse_type(s, "test")


LONGS = st.integers(-(1 << 63), (1 << 63) - 1)
INTS = st.integers(-(1 << 31), (1 << 31) - 1)
STRINGS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)
KEYS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)


@settings(max_examples=60)
@given(st.lists(LONGS, max_size=30), st.lists(INTS, max_size=30), st.lists(st.booleans(), max_size=30),
       st.lists(st.floats(allow_nan=False), max_size=30))
def test_scalars_round_trip(longs, ints, bools, doubles):
    assert decoded(text("Long"), pa.array(longs, pa.int64())).to_pylist() == longs
    assert decoded(text("Integer"), pa.array(ints, pa.int32())).to_pylist() == ints
    assert decoded(text("Boolean"), pa.array(bools, pa.bool_())).to_pylist() == bools
    assert decoded(text("Double"), pa.array(doubles, pa.float64())).to_pylist() == doubles
    shorts = [i % 32768 for i in ints]
    assert decoded(text("Short"), pa.array(shorts, pa.int16())).to_pylist() == shorts


@given(st.lists(st.one_of(st.none(), st.binary(max_size=5)), max_size=30))
def test_scattered_puts_values_at_the_present_rows(rows):
    """An entry column: the encoded values of the present rows, a null at every other row."""
    present = np.array([r is not None for r in rows], dtype=bool)
    got = scattered(pa.array([r for r in rows if r is not None], pa.binary()), present)
    got.validate(full=True)
    assert got.type == pa.binary() and got.to_pylist() == rows


@settings(max_examples=40)
@given(st.lists(st.lists(LONGS, max_size=4), min_size=1, max_size=10), st.data())
def test_a_sliced_list_or_map_column_encodes_its_own_rows(lists, draw):
    """A column that is a slice of a longer one (its list offsets do not start at 0)."""
    start = draw.draw(st.integers(0, len(lists) - 1))
    longs = pa.array(lists, pa.list_(pa.int64()))
    maps = pa.array([[(str(i), v) for i, v in enumerate(row)] for row in lists], pa.map_(pa.string(), pa.int64()))
    for t, column in ((text("List<Long>"), longs), (text("Map<String, Long>"), maps)):
        assert encode(t, column.slice(start)).to_pylist() == encode(t, column).to_pylist()[start:]


@settings(max_examples=80)
@given(st.lists(st.one_of(st.none(), STRINGS), max_size=20))
def test_strings_round_trip_with_nulls_non_ascii_and_surrogate_pairs(values):
    assert decoded(text("String"), pa.array(values, pa.string())).to_pylist() == values


def test_string_value_bytes_are_flinks():
    """Flink's StringValue: varint(length + 1), one varint per UTF-16 unit (é, € 2 bytes; 😀 2 × 3)."""
    enc = string_values(pa.array(["ab", None, "é€😀", "x" * 200])).to_pylist()
    assert enc[0] == b"\x03ab"
    assert enc[1] == b"\x00"
    assert enc[2] == bytes([5, 0xE9, 0x01, 0xAC, 0x41, 0xBD, 0xB0, 0x03, 0x80, 0xBC, 0x03])
    assert enc[3] == b"\xc9\x01" + b"x" * 200
    assert varints(np.array([0, 127, 128, 2**21])).to_pylist() == [b"\x00", b"\x7f", b"\x80\x01",
                                                                   b"\x80\x80\x80\x01"]


@settings(max_examples=40)
@given(st.lists(st.tuples(KEYS, LONGS), max_size=15))
def test_tuples_round_trip(pairs):
    t = text("Tuple2<String, Long>")
    values = pa.array([{"f0": a, "f1": b} for a, b in pairs], t.arrow())
    assert decoded(t, values).to_pylist() == values.to_pylist()


@settings(max_examples=40)
@given(st.lists(st.one_of(st.none(), st.tuples(st.one_of(st.none(), INTS), st.one_of(st.none(), STRINGS))),
                max_size=15))
def test_pojos_round_trip_with_null_objects_and_fields(rows):
    t = parse_type({"pojo": "flinkjob.Profile", "fields": {"name": "String", "hits": "Integer"}}, "test")
    assert [n for n, _ in t.fields] == ["hits", "name"]  # Flink's PojoSerializer orders fields by name
    values = pa.array([None if r is None else {"hits": r[0], "name": r[1]} for r in rows], t.arrow())
    assert decoded(t, values).to_pylist() == values.to_pylist()


@settings(max_examples=40)
@given(st.lists(st.lists(LONGS, max_size=6), max_size=12),
       st.lists(st.dictionaries(KEYS, st.one_of(st.none(), LONGS), max_size=5), max_size=12))
def test_lists_maps_and_arrays_round_trip(lists, maps):
    assert decoded(text("List<Long>"), pa.array(lists, pa.list_(pa.int64()))).to_pylist() == lists
    assert decoded(text("long[]"), pa.array(lists, pa.list_(pa.int64()))).to_pylist() == lists
    m = pa.array([list(d.items()) for d in maps], pa.map_(pa.string(), pa.int64()))
    assert decoded(text("Map<String, Long>"), m).to_pylist() == m.to_pylist()
    nested = [[{"f0": str(v), "f1": v} for v in row] for row in lists]
    t = text("List<Tuple2<String, Long>>")
    assert decoded(t, pa.array(nested, t.arrow())).to_pylist() == nested


@settings(max_examples=40)
@given(st.lists(st.one_of(st.none(), st.datetimes(dt.datetime(1678, 1, 1), dt.datetime(2261, 12, 31))), max_size=10))
def test_time_types_round_trip(values):
    """Within the nanosecond timestamps the reader decodes to."""
    ts = pa.array(values, pa.timestamp("us"))
    for name in ("Instant", "LocalDateTime", "java.sql.Timestamp"):
        assert decoded(text(name), ts).cast(pa.timestamp("us")).to_pylist() == values
    dates = pa.array([None if v is None else v.date() for v in values], pa.date32())
    assert decoded(text("LocalDate"), dates).to_pylist() == dates.to_pylist()
    times = pa.array([None if v is None else v.time() for v in values], pa.time64("us"))
    assert decoded(text("LocalTime"), times).cast(pa.time64("us")).to_pylist() == times.to_pylist()
    millis = [None if v is None else v.replace(microsecond=v.microsecond // 1000 * 1000) for v in values]
    assert decoded(text("Date"), ts).cast(pa.timestamp("us")).to_pylist() == millis


@settings(max_examples=40)
@given(st.lists(st.one_of(st.none(), st.decimals(allow_nan=False, allow_infinity=False, places=4)), max_size=10),
       st.lists(st.one_of(st.none(), st.integers(-(10**30), 10**30)), max_size=10))
def test_big_numbers_round_trip(decimals, integers):
    got = decoded(text("BigDecimal"), pa.array([None if d is None else str(d) for d in decimals])).to_pylist()
    assert [None if g is None else decimal.Decimal(g) for g in got] == decimals
    got = decoded(text("BigInteger"), pa.array([None if i is None else str(i) for i in integers])).to_pylist()
    assert [None if g is None else int(g) for g in got] == integers


def test_ttl_nullable_chars_bytes_and_windows_round_trip():
    ttl = T.Ttl(text("String"), "ttl")
    v = pa.array([{"ttl_ts": 1700000000000, "value": "a"}, {"ttl_ts": -1, "value": None}], ttl.arrow())
    assert decoded(ttl, v).to_pylist() == v.to_pylist()
    assert decoded(text("Nullable<Long>"), pa.array([1, None, 3])).to_pylist() == [1, None, 3]
    assert decoded(text("Character"), pa.array(["a", "é", "€"])).to_pylist() == ["a", "é", "€"]
    assert decoded(text("byte[]"), pa.array([b"", b"\x00\xff"])).to_pylist() == [b"", b"\x00\xff"]
    w = pa.array([{"start": 0, "end": 10000}, {"start": -5, "end": 1}], text("TimeWindow").arrow())
    assert decoded(text("TimeWindow"), w).to_pylist() == w.to_pylist()
    assert encode(text("VoidNamespace"), pa.nulls(2)).to_pylist() == [b"\x00", b"\x00"]


def _canonical_headers():
    paths = [FIXTURES / n / "savepoint" for n in FIXTURE_NAMES if "canonical" in n]
    return paths


def _header_pairs(path):
    sp = open_flink_savepoint(path)
    for op in sp.metadata.operators:
        for sub in op.subtasks:
            h = sub.managed_keyed
            if isinstance(h, KeyGroupsStream) and h.layout == "canonical":
                data = read_stream(sp.location, h.stream)
                hd = read_keyed_header(data, "stream")
                yield f"{op.uid} keyed", data[:hd.length], keyed_header(hd.key, hd.states)
            for oh in sub.managed_operator:
                data = read_stream(sp.location, oh.stream)
                hd = read_operator_header(data, "stream")
                yield f"{op.uid} operator", data[:hd.length], operator_header(hd.states)


@pytest.mark.parametrize("fixture", [n for n in FIXTURE_NAMES if "canonical" in n])
def test_headers_are_byte_identical_to_the_dev_fixtures(fixture):
    pairs = list(_header_pairs(FIXTURES / fixture / "savepoint"))
    assert len(pairs) >= 10
    for what, flink, mine in pairs:
        assert mine == flink, what


def test_headers_are_byte_identical_to_the_jobs_savepoints(flink_snapshots):
    """Long, String and Tuple2 keys, every state group (TTL, POJO, tuples, lists, maps), timers,
    windows, list, union and broadcast state, from both backends."""
    snaps = flink_snapshots("2.3.0", [SHAPES["rocksdb-canonical"], HASHMAP_CANONICAL,
                                      dict(SHAPES["hashmap-native"], format="canonical")])
    seen = 0
    for snap in snaps:
        for what, flink, mine in _header_pairs(snap.path):
            assert mine == flink, f"{snap.path} {what}"
            seen += 1
    assert seen >= 30


def test_bindings_name_every_header_type_of_the_fixtures():
    for name in FIXTURE_NAMES:
        sp = open_flink_savepoint(FIXTURES / name / "savepoint")
        for op in sp.operators:
            header = op.keyed_header
            types = [] if header is None else [header.key] + [s.value for s in header.states if s.kind != "timers"]
            types += [m.value for m in op.operator_states.values()]
            for t in types:
                plain = t.inner if isinstance(t, T.Ttl) else t
                if isinstance(plain, T.Map) and isinstance(plain.value, T.Ttl):
                    plain = T.Map(plain.key, plain.value.inner, plain.serializer)
                if isinstance(plain, T.List) and isinstance(plain.element, T.Ttl):
                    plain = T.List(plain.element.inner, plain.serializer)
                assert parse_type(type_text(plain), "t") == plain, (name, op.uid, t)


def test_derived_types():
    assert derive_type(pa.int64(), "c") == text("Long")
    assert derive_type(pa.list_(pa.string()), "c") == text("List<String>")
    assert derive_type(pa.map_(pa.string(), pa.float64()), "c") == text("Map<String, Double>")
    assert derive_type(pa.struct([("f0", pa.string()), ("f1", pa.int32())]), "c") == \
        text("Tuple2<String, Integer>")
    with pytest.raises(FlinkEncodeError) as e:
        derive_type(pa.timestamp("us"), "operator 'p', column 'at'")
    assert str(e.value) == ("operator 'p', column 'at': a timestamp[us] column has no single Flink type; "
                            "give its flink type (Instant, LocalDateTime or java.sql.Timestamp)")


@pytest.mark.parametrize("binding,message", [
    ("Tuple2<Long>", "s: Tuple2 takes 2 type argument(s) in 'Tuple2<Long>', got 1"),
    ("List<Long", "s: Flink type 'List<Long' ends early (a '>' is missing)"),
    ("Long>", "s: unexpected '>' in Flink type 'Long>'"),
    (7, "s must be a Flink type such as Long or Tuple2<String, Long>, got int"),
    ({"pojo": "a.B"}, "s: a POJO is {pojo: <class>, fields: {<name>: <type>, ...}}"),
])
def test_bad_bindings_are_one_line(binding, message):
    with pytest.raises(FlinkEncodeError) as e:
        parse_type(binding, "s")
    assert str(e.value) == message


def test_values_a_serializer_cannot_write_are_one_line():
    with pytest.raises(FlinkEncodeError) as e:
        encode(text("Long"), pa.array([1, None]), "operator 'p', state 'n'")
    assert str(e.value) == "operator 'p', state 'n': row 1 is null, which a Flink long cannot hold here"
    with pytest.raises(FlinkEncodeError) as e:
        encode(text("Tuple2<String, Long>"), pa.array([{"a": 1}]), "v")
    assert str(e.value) == "v: the struct has no field(s) f0, f1 for Tuple2<String, long> (it has a)"
    with pytest.raises(FlinkEncodeError) as e:
        encode(text("Integer"), pa.array(["x"]), "v")
    assert str(e.value).startswith("v: a string column does not fit a Flink int")


def test_pojo_keys_are_refused():
    key = parse_type({"pojo": "a.K", "fields": {"id": "Long"}}, "k")
    with pytest.raises(FlinkEncodeError) as e:
        key_java_type(key, "operator 'p'")
    assert str(e.value) == ("operator 'p': a POJO a.K key cannot be written: Flink places keys by their Java "
                            "hashCode, which is known here only for String, Long, Integer, Short, Byte, "
                            "Boolean, Character, Double, Float and tuples of these")
    assert key_java_type(text("Tuple2<String, Integer>"), "p") == ("String", "Integer")
