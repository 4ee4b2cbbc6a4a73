"""BinaryRowData written as Flink writes it, and the key groups of SQL operators' key rows.

Every sample real Flink 1.20 and 2.3 wrote (`RowDataSamples.java`: every type the reader
decodes, nulls, wide rows, RowKinds, RAW and STRUCTURED values, lists and maps of rows) is
decoded and encoded again, as columns, to exactly Flink's bytes, also from the types Spark gives
those columns back as; random values of every type come back unchanged from encode then decode
(as values, and as TTL-wrapped keys); a value its type cannot hold is one line; the key group
computed from a key row is the one stored with it, for every key of the suite's SQL savepoints; a
key filter (`read --key`) on a SQL operator reads exactly that key.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import flink_job
from support import flink_rowdata
from statectl.statefmt.errors import FlinkEncodeError, KeyTypeError, UnsupportedFlinkFeature
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.encode import encode
from statectl.statefmt.flink.model import spark_arrow_type
from statectl.statefmt.flink.rowdata import ROW_KINDS, RowData, SizedBytes, SqlValue
from statectl.statefmt.flink.rowdata_keys import encode_row, row_key_group
from statectl.statefmt.flink.rowdata_write import encode_rows
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint
from statectl.statefmt.flink.serializers import read_top_snapshot
from statectl.statefmt.flink.sqltypes import SqlType
from statectl.statefmt.flink.types import Buf

PROBE = Path(__file__).parents[2] / "fixtures" / "flink-sql-probe"
ROW_CASES = ["scalars", "scalars_not_null", "decimals", "strings", "binaries", "temporal", "intervals", "arrays",
             "array_elements", "maps", "nested", "all_null", "wide_56", "wide_57", "wide_70", "empty_row", "raw",
             "structured"]
KIND = {None: 0, **{k: i for i, k in enumerate(ROW_KINDS) if i}}


def _sample(version: str, name: str):
    """(type, data, where each serialized value starts, and its end) of one sample file."""
    data = (flink_rowdata.make_samples(version) / f"{name}.bin").read_bytes()
    r = Reader(data, name)
    t = read_top_snapshot(r)
    count = r.int()
    return t, data, r.pos, count


def _through_spark(values: pa.Array) -> pa.Array | None:
    """*values* as a Spark input gives them back (None: nanoseconds, more than Spark holds)."""
    try:
        return values.cast(spark_arrow_type(values.type))
    except pa.ArrowInvalid:
        return None


@pytest.mark.parametrize("version", flink_job.SQL_VERSIONS)
@pytest.mark.parametrize("name", ROW_CASES)
def test_rows_encode_to_flinks_bytes(version, name):
    t, data, pos, count = _sample(version, name)
    buf, checked = Buf(data, name), 0
    for _ in range(count):
        size = struct.unpack_from(">i", data, pos)[0]
        try:
            row = t.column(buf, np.array([pos]))[0]
        except UnsupportedFlinkFeature:  # a TIMESTAMP(9) beyond the years nanoseconds hold
            assert name == "temporal"
        else:
            assert encode(t, row).to_pylist() == [data[pos:pos + 4 + size]]
            spark = _through_spark(row)
            if spark is not None:
                assert encode(t, spark).to_pylist() == [data[pos:pos + 4 + size]]
            checked += 1
        pos += 4 + size
    assert checked >= (count - 1 if name == "temporal" else count) > 0


@pytest.mark.parametrize("version", flink_job.SQL_VERSIONS)
@pytest.mark.parametrize("name", ["list_of_rows", "map_of_row_lists"])
def test_lists_and_maps_of_rows_encode_to_flinks_bytes(version, name):
    t, data, pos, count = _sample(version, name)
    buf, end, decoded = Buf(data, name), np.array([pos]), []
    for _ in range(count):
        value, end = t.column(buf, end)
        decoded.append(value)
    assert int(end[0]) == len(data)
    values = pa.concat_arrays(decoded)
    assert b"".join(encode(t, values).to_pylist()) == data[pos:]


def test_key_groups_of_sql_keys_are_flinks():
    checked = 0
    paths = [PROBE / fmt for fmt in ("hashmap-canonical", "rocksdb-native")]
    paths += [flink_job.make_sql_snapshots("2.3.0")[0].path]
    for path in paths:
        for op in open_flink_savepoint(path).operators:
            if op.keyed_header is None or not isinstance(op.key_type, RowData):
                continue
            names = [f"f{i}" for i in range(len(op.key_type.fields))]
            for row in keyed_table(op).select(["_key_group", *names]).to_pylist()[::7]:
                values = [row[n] for n in names]
                assert row_key_group(values, op.key_type.fields, op.max_parallelism) == row["_key_group"]
                checked += 1
    assert checked > 500


def test_key_filter_on_a_sql_operator(cli):
    path = str(PROBE / "rocksdb-native")
    out = cli("read", path, "--name", "GroupAggregate[40]", "--key", "35", "--key", "857", "-f", "jsonl")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.strip().splitlines()) == [
        '{"f0":35,"accState":{"f0":15,"f1":9498118,"f2":"fb566","_rowkind":null}}',
        '{"f0":857,"accState":{"f0":28,"f1":15471268,"f2":"f410b","_rowkind":null}}']
    bad = cli("read", path, "--name", "GroupAggregate[40]", "--key", '"x"')
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith(
        "error: operator 0380c0c2e041cd487c346c42780dbadd: key filter: 'x' is not a value of INT")


# --- random values of every type: decode(encode(x)) == x ----------------------------------

def S(root, **kw) -> SqlType:
    return SqlType(root, **kw)


STRING = S("VARCHAR", length=2147483647)
_INSTANTS = dict(min_value=datetime.datetime(1678, 1, 1), max_value=datetime.datetime(2261, 12, 31))
SCALARS = [
    (S("BOOLEAN"), st.booleans()),
    (S("TINYINT"), st.integers(-2**7, 2**7 - 1)),
    (S("SMALLINT"), st.integers(-2**15, 2**15 - 1)),
    (S("INTEGER"), st.integers(-2**31, 2**31 - 1)),
    (S("BIGINT"), st.integers(-2**63, 2**63 - 1)),
    (S("FLOAT"), st.floats(width=32, allow_nan=False)),
    (S("DOUBLE"), st.floats(allow_nan=False)),
    (S("DECIMAL", precision=10, scale=2), st.decimals(-10**8 + 1, 10**8 - 1, places=2)),
    (S("DECIMAL", precision=18, scale=0), st.decimals(-10**18 + 1, 10**18 - 1, places=0)),
    (S("DECIMAL", precision=38, scale=10), st.decimals(-10**28 + 1, 10**28 - 1, places=10)),
    (S("DECIMAL", precision=19, scale=19), st.decimals(-1 + decimal.Decimal("1e-19"), 1 - decimal.Decimal("1e-19"),
                                                       places=19)),
    (S("CHAR", length=5), st.text(max_size=5)),
    (STRING, st.text(max_size=30)),
    (S("BINARY", length=3), st.binary(min_size=3, max_size=3)),
    (S("VARBINARY", length=2147483647), st.binary(max_size=30)),
    (S("DATE"), st.dates()),
    (S("TIME_WITHOUT_TIME_ZONE", precision=3),
     st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (S("TIMESTAMP_WITHOUT_TIME_ZONE", precision=3),
     st.datetimes().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (S("TIMESTAMP_WITHOUT_TIME_ZONE", precision=6), st.datetimes()),
    (S("TIMESTAMP_WITHOUT_TIME_ZONE", precision=9), st.datetimes(**_INSTANTS)),
    (S("TIMESTAMP_WITH_LOCAL_TIME_ZONE", precision=3),
     st.datetimes(timezones=st.just(datetime.timezone.utc)).map(
         lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (S("TIMESTAMP_WITH_LOCAL_TIME_ZONE", precision=6), st.datetimes(timezones=st.just(datetime.timezone.utc))),
    (S("INTERVAL_YEAR_MONTH", resolution="YEAR(2) TO MONTH"), st.integers(-2**31, 2**31 - 1)),
    (S("INTERVAL_DAY_TIME", resolution="DAY(2) TO SECOND(3)"), st.integers(-2**63, 2**63 - 1)),
    (S("RAW", class_name="java.time.Duration"), st.binary(max_size=20)),
]


def _nullable(s):
    return st.none() | s


def _composite(scalar):
    """A composite type around one scalar type, and its values' strategy."""
    t, s = scalar
    return st.sampled_from([
        (S("ARRAY", children=(t,)), st.lists(_nullable(s), max_size=40)),
        (S("MAP", children=(STRING, t)), st.dictionaries(st.text(max_size=9), _nullable(s), max_size=5).map(
            lambda d: list(d.items()))),
        (S("MULTISET", children=(t,)), st.lists(st.tuples(s, st.integers(0, 9)), max_size=5).map(
            lambda items: list(dict(items).items()))),
        (S("ROW", children=(t, S("INTEGER", nullable=False)), names=("a", "b")),
         st.fixed_dictionaries({"a": _nullable(s), "b": st.integers(-9, 9)})),
        (S("ARRAY", children=(S("ARRAY", children=(t,)),)), st.lists(_nullable(st.lists(_nullable(s), max_size=4)),
                                                                    max_size=4)),
    ])


_TYPED = st.sampled_from(SCALARS).flatmap(lambda x: st.just(x) | _composite(x))


@settings(max_examples=300)
@given(st.lists(_TYPED, min_size=0, max_size=6).flatmap(
    lambda fields: st.tuples(st.just(tuple(t for t, _ in fields)),
                             st.lists(st.tuples(*[_nullable(s) for _, s in fields], st.integers(0, 3)),
                                      min_size=1, max_size=8))))
def test_encode_then_decode_is_identity(typed):
    fields, rows = typed
    t = RowData(fields)
    names = t.names
    columns = [pa.array([r[i] for r in rows], f.arrow()) for i, f in enumerate(fields)]
    kinds = pa.array([None if r[-1] == 0 else ROW_KINDS[r[-1]] for r in rows], pa.string())
    values = pa.StructArray.from_arrays(columns + [kinds], names=names + ["_rowkind"])
    encoded = encode(t, values)
    data = b"".join(encoded.to_pylist())
    starts = np.cumsum([0] + [len(b) for b in encoded.to_pylist()[:-1]])
    decoded, ends = t.column(Buf(data, "x"), starts)
    assert int(ends[-1]) == len(data)
    assert decoded.to_pylist() == values.to_pylist()
    assert all((len(b) - 4) % 8 == 0 for b in encoded.to_pylist())
    key = t.as_key()  # as a key projection writes it, TTL-wrapped as table.exec.state.ttl does
    ttl = T.Ttl(key)
    stamped = pa.StructArray.from_arrays([pa.array(range(len(rows)), pa.int64()), values], names=[T.TTL_FIELD, "value"])
    encoded = encode(ttl, stamped)
    data = b"".join(encoded.to_pylist())
    starts = np.cumsum([0] + [len(b) for b in encoded.to_pylist()[:-1]])
    decoded, _ = ttl.column(Buf(data, "x"), starts)
    assert decoded.field("value").to_pylist() == [{k: v for k, v in r.items() if k != "_rowkind"}
                                                  for r in values.to_pylist()]
    assert decoded.field(T.TTL_FIELD).to_pylist() == list(range(len(rows)))


@settings(max_examples=100)
@given(st.sampled_from(SCALARS).flatmap(_composite).flatmap(
    lambda c: st.tuples(st.just(c[0]), st.lists(c[1], min_size=1, max_size=5))))
def test_composite_values_outside_rows_round_trip(typed):
    """An ARRAY, MAP, MULTISET or ROW value on its own (a list or map state's element, not a row's
    field) decodes from its encoding to the same values."""
    t, values = typed
    column = pa.array(values, t.arrow())
    encoded = encode(SqlValue(t), column)
    data = b"".join(encoded.to_pylist())
    starts = np.cumsum([0] + [len(b) for b in encoded.to_pylist()[:-1]])
    assert SqlValue(t).column(Buf(data, "x"), starts)[0].to_pylist() == column.to_pylist()


# --- what a type cannot hold: one line ------------------------------------------------------

def _refusal(fields, columns, match):
    values = pa.StructArray.from_arrays(columns, names=[f"f{i}" for i in range(len(columns))])
    with pytest.raises(FlinkEncodeError, match=match) as e:
        encode(RowData(tuple(fields), False), values, "accState")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fields, columns, match", [
    ([S("INTEGER")], [pa.array([1, 2**40])],
     r"^accState\.f0: int64 values do not fit INT \(Integer value 1099511627776"),
    ([S("DECIMAL", precision=10, scale=2)], [pa.array([decimal.Decimal("1.234")])],
     r"^accState\.f0: decimal128\(4, 3\) values do not fit DECIMAL\(10, 2\) \(Rescaling"),
    ([S("DECIMAL", precision=4, scale=0)], [pa.array([decimal.Decimal("12345")])],
     r"^accState\.f0: decimal128\(5, 0\) values do not fit DECIMAL\(4, 0\)"),
    ([S("TIMESTAMP_WITHOUT_TIME_ZONE", precision=3)], [pa.array([1_000_001], pa.timestamp("us"))],
     r"^accState\.f0: timestamp\[us\] values do not fit TIMESTAMP\(3\) \(Casting from timestamp\[us\] to "
     r"timestamp\[ms\] would lose data: 1000001\)$"),
    ([S("TIME_WITHOUT_TIME_ZONE", precision=0)], [pa.array([1_000_001], pa.time64("us"))],
     r"^accState\.f0: a value does not fit TIME\(0\) \(a TIME holds milliseconds\)$"),
    ([S("RAW", class_name="java.time.Duration")], [pa.array(["PT1S"])],
     r"^accState\.f0: a RAW\('java.time.Duration'\) value is its serializer's bytes, passed through as they were "
     r"read; a string column cannot give it new contents$"),
    ([S("BIGINT", nullable=False)], [pa.array([1, None])],
     r"^accState\.f0: row 1 is null, which BIGINT NOT NULL cannot hold$"),
    ([S("ROW", children=(S("INTEGER"),), names=("x",))], [pa.array([{"y": 1}])],
     r"^accState\.f0: the struct has no field\(s\) x for row \(it has y\)$"),
])
def test_a_value_its_type_cannot_hold_is_one_line(fields, columns, match):
    _refusal(fields, columns, match)


def test_a_raw_value_outside_a_row_is_passed_through_only():
    raw = SizedBytes("org.apache.flink.table.runtime.typeutils.RawValueDataSerializer", "RAW")
    assert encode(raw, pa.array([b"\x01\x02"])).to_pylist() == [b"\x00\x00\x00\x02\x01\x02"]
    with pytest.raises(FlinkEncodeError, match="cannot give it new contents"):
        encode(raw, pa.array([3]), "value")


def test_an_unknown_row_kind_is_one_line():
    values = pa.StructArray.from_arrays([pa.array([1]), pa.array(["+X"])], names=["f0", "_rowkind"])
    with pytest.raises(FlinkEncodeError, match=r"^value: '\+X' is not a RowKind \(one of \+I, -U, \+U, -D\)$"):
        encode_rows(values, (S("INTEGER"),), True, "value")


def test_a_key_projection_reserves_space_for_a_null_decimal_or_timestamp():
    fields = (S("DECIMAL", precision=20, scale=2), S("TIMESTAMP_WITHOUT_TIME_ZONE", precision=9))
    head = 8 + 16
    assert encode_row([None, None], fields) == bytes([0, 0b11 << 0]) + bytes(head - 2)
    key = encode_row([None, None], fields, projected=True)
    assert len(key) == head + 16 + 8
    assert struct.unpack_from("<QQ", key, 8) == (head << 32, (head + 16) << 32)
    with pytest.raises(KeyTypeError, match="^'x' is not a value of DECIMAL\\(20, 2\\)$"):
        encode_row(["x", None], fields)


@settings(max_examples=50)
@given(st.lists(st.tuples(st.none() | st.text(max_size=20), st.integers(-2**63, 2**63 - 1)), min_size=1, max_size=30))
def test_row_hash_codes_are_murmur3_of_the_rows_bytes(keys):
    """Vectorized `BinaryRowData.hashCode` equals an independent MurmurHash3 (mmh3, seed 42) of
    each row's bytes, for rows of one length (viewed in place) and of many (gathered)."""
    import mmh3

    from statectl.statefmt.flink.rowdata_keys import row_hash_codes

    fields = (STRING, S("BIGINT"))
    values = pa.StructArray.from_arrays([pa.array([k[0] for k in keys], pa.string()), pa.array([k[1] for k in keys])],
                                        names=["f0", "f1"])
    framed = encode(RowData(fields, False), values)
    rows = [b[4:] for b in framed.to_pylist()]
    want = [mmh3.hash(r, 42, signed=True) for r in rows]
    assert row_hash_codes(framed, skip=4).tolist() == want
    assert row_hash_codes(pa.array(rows, pa.binary())).tolist() == want
