"""Avro state (flink-avro's AvroSerializer) decoded from the writer schema in its snapshot.

The fixtures `tests/fixtures/flink-avro-dev/` (README there) hold a keyed operator whose
`profile` (VALUE), `history` (LIST) and `by_kind` (MAP) states are Avro GenericRecords, in a
hashmap canonical and a RocksDB native savepoint, with every key's state from the job's model:
both read equal to it, locally and through Spark. The schema mapping, the snapshot versions
and the wire encoding are checked on hand-made bytes, and damaged values end in one line.
"""

from __future__ import annotations

import base64
from decimal import Decimal
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import statectl
from support.avro_values import blocks, i32, i64, java_utf, plain, string, string_value, varint
from statectl.statefmt.errors import FlinkFormatError, UnsupportedFlinkFeature
from statectl.statefmt.flink.avro_schema import avro_type
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.savepoint import open_flink_savepoint, raw_entries
from statectl.statefmt.flink.streams import decode_canonical_state
from statectl.statefmt.flink.serializers import AVRO_SNAPSHOT, read_snapshot
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.types.avro import AvroDataError
from statectl.statefmt.flink.types.avro_composite import Avro

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-avro-dev"
NAMES = ["avro-hashmap-canonical", "avro-rocksdb-native"]
UID = "dev-avro-proc"
STATES = ("profile", "history", "by_kind")


def expected(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text())["operators"][UID]


def schemas(name: str) -> dict[str, dict]:
    return {s["name"]: json.loads(s["writer_schema"]) for s in expected(name)["states"] if "writer_schema" in s}


def as_model(rows: list[dict], name: str) -> dict[str, dict]:
    """Every row's key and states in expected.json's form."""
    s = schemas(name)
    out = {}
    for row in rows:
        out[row["key"]] = {
            "profile": plain(s["profile"], row["profile"]),
            "history": [plain(s["history"], v) for v in row["history"]],
            "by_kind": {k: plain(s["by_kind"], v) for k, v in sorted(row["by_kind"])},
        }
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_key_reads_equal_to_the_model(name):
    want = expected(name)
    table = statectl.open_savepoint(str(FIXTURES / name / "savepoint")).keyed(UID, include_key_group=True)
    rows = table.to_pylist()
    assert len(rows) == 12
    assert as_model(rows, name) == want["expected"]
    assert {r["key"]: r["_key_group"] for r in rows} == {k: v["key_group"] for k, v in want["keys"].items()}


@pytest.mark.slow
def test_spark_reads_the_same_rows(spark):
    for name in NAMES:
        path = str(FIXTURES / name / "savepoint")
        df = statectl.open_savepoint(path, spark=spark).keyed(UID)
        rows = [r.asDict(recursive=True) for r in df.collect()]
        for r in rows:  # Spark's maps come as dicts
            r["by_kind"] = list(r["by_kind"].items())
            r["profile"]["counters"] = list(r["profile"]["counters"].items())
        assert as_model(rows, name) == expected(name)["expected"], name
    # Spark SQL over the decoded columns: nested fields, list sizes, map lookups
    reader = statectl.open_savepoint(str(FIXTURES / NAMES[1] / "savepoint"), spark=spark)
    got = reader.sql(f"SELECT key, profile.address.city AS city, size(history) AS n, by_kind['pay'].count AS "
                     f"pays, history[0].payload.string AS first_sku FROM `{UID}`").collect()
    want = expected(NAMES[1])["expected"]
    assert {r["key"]: (r["city"], r["n"], r["pays"], r["first_sku"]) for r in got} == {
        k: (v["profile"]["address"]["city"], len(v["history"]), v["by_kind"].get("pay", {}).get("count"),
            v["history"][0]["payload"] if isinstance(v["history"][0]["payload"], str) else None)
        for k, v in want.items()}


def test_read_gives_typed_columns(cli):
    """`statectl read` of one key (the local engine), as JSON lines: the decoded columns."""
    want = expected(NAMES[0])["expected"]["acct_00"]
    path = str(FIXTURES / NAMES[0] / "savepoint")
    result = cli("read", path, "--uid", UID, "--key", "acct_00", "--format", "jsonl", "--engine", "local")
    assert result.returncode == 0, result.stderr
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    profile = row["profile"]
    assert profile["address"] == want["profile"]["address"]
    assert profile["balance"] == float(want["profile"]["balance"]) == 9369.26
    assert base64.b64decode(profile["avatar_hash"]).hex() == want["profile"]["avatar_hash"]
    assert profile["last_seen"] == "2025-06-15T15:07:15.500000Z"  # 1750000035500 ms
    assert [h["seq"] for h in row["history"]] == [h["seq"] for h in want["history"]]
    assert row["history"][0]["payload"] == {"string": None, "long": 389608168821}
    assert row["by_kind"]["cart"]["seqs"] == want["by_kind"]["cart"]["seqs"]


PROFILE_TYPE = pa.struct([
    ("id", pa.string()), ("visits", pa.int32()), ("total_micros", pa.int64()), ("score", pa.float64()),
    ("active", pa.bool_()), ("nickname", pa.string()), ("tier", pa.string()), ("tags", pa.list_(pa.string())),
    ("counters", pa.map_(pa.string(), pa.int64())),
    ("address", pa.struct([("street", pa.string()), ("zip", pa.int32()), ("city", pa.string()),
                           ("geo", pa.struct([("lat", pa.float32()), ("lon", pa.float32())]))])),
    ("avatar_hash", pa.binary()), ("blob", pa.binary()), ("last_seen", pa.timestamp("ms", tz="UTC")),
    ("balance", pa.decimal128(12, 2))])
HISTORY_TYPE = pa.struct([
    ("seq", pa.int32()), ("kind", pa.string()), ("at", pa.timestamp("ms", tz="UTC")), ("day", pa.date32()),
    ("amount", pa.decimal128(10, 3)), ("payload", pa.struct([("string", pa.string()), ("long", pa.int64())])),
    ("ref", pa.string())])


def test_the_writer_schemas_map_to_arrow_types():
    s = {k: json.dumps(v) for k, v in schemas(NAMES[0]).items()}
    assert avro_type(s["profile"]).arrow() == PROFILE_TYPE
    assert avro_type(s["history"]).arrow() == HISTORY_TYPE
    assert avro_type(s["by_kind"]).arrow() == pa.struct([
        ("count", pa.int64()), ("last_seq", pa.int32()), ("first_at", pa.timestamp("ms", tz="UTC")),
        ("seqs", pa.list_(pa.int32())), ("share", pa.float32()), ("channel", pa.string())])
    t = avro_type(s["profile"])
    assert isinstance(t, Avro) and t.describe() == "Avro dev.fixtures.avro.CustomerProfile"


@pytest.mark.parametrize("version", [1, 2, 3])
def test_snapshot_versions(version):
    schema = '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"long"}]}'
    runtime = "org.apache.avro.generic.GenericRecord"
    payload = {1: java_utf(schema), 2: java_utf(runtime) + java_utf(schema),
               3: string_value(runtime) + string_value(schema)}[version]
    data = java_utf(AVRO_SNAPSHOT) + i32(version) + payload
    r = Reader(data, "snap")
    t = read_snapshot(r)
    assert r.at_end() and isinstance(t, Avro)
    assert (t.schema_name, t.runtime_class) == ("n.R", runtime if version > 1 else "")
    assert t.arrow() == pa.struct([("a", pa.int64())])
    with pytest.raises(UnsupportedFlinkFeature, match="AvroSerializerSnapshot version 4 at offset 68 is not"):
        read_snapshot(Reader(java_utf(AVRO_SNAPSHOT) + i32(4) + payload, "snap"))


@pytest.mark.parametrize("schema, why", [
    ("{not json", "Avro schema is not valid JSON"),
    ('{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}',
     "Avro schema: record Node contains itself (a recursive type has no column type)"),
    ('{"type":"record","name":"R","fields":[{"name":"x","type":"Nope"}]}', "Avro schema: unknown type 'Nope'"),
    ('["int", "int"]', "Avro schema: a union with two branches of type int"),
])
def test_schemas_without_a_column_type_stay_bytes(schema, why):
    t = avro_type(schema)
    assert isinstance(t, T.Opaque) and t.reason == why and t.arrow() == pa.binary()


def test_type_mapping_of_every_kind():
    schema = {"type": "record", "name": "All", "namespace": "x", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "e2", "type": "E"},  # a reference to a named type
        {"name": "u", "type": ["int", "string", "null"]},
        {"name": "u2", "type": ["string", "null"]},
        {"name": "one", "type": ["double"]},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "d", "type": {"type": "fixed", "name": "D", "size": 4, "logicalType": "decimal", "precision": 9,
                               "scale": 1}},
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "odd", "type": {"type": "int", "logicalType": "not-a-logical-type"}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "E"}}},
        {"name": "n", "type": "null"}]}
    assert avro_type(json.dumps(schema)).arrow() == pa.struct([
        ("e", pa.string()), ("e2", pa.string()), ("u", pa.struct([("int", pa.int32()), ("string", pa.string())])),
        ("u2", pa.string()), ("one", pa.float64()), ("f", pa.binary()), ("d", pa.decimal128(9, 1)),
        ("big", pa.binary()), ("t", pa.timestamp("us", tz="UTC")), ("lt", pa.timestamp("ms")),
        ("tm", pa.time32("ms")), ("odd", pa.int32()), ("m", pa.map_(pa.string(), pa.list_(pa.string()))),
        ("n", pa.null())])


# --- the wire encoding, on hand-made bytes ------------------------------------------------

REC = {"type": "record", "name": "R", "fields": [
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "ints", "type": {"type": "array", "items": "int"}},
    {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "u", "type": ["null", "string", {"type": "fixed", "name": "H", "size": 2}]},
    {"name": "d", "type": {"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal", "precision": 7,
                           "scale": 2}},
    {"name": "b", "type": "boolean"}]}


def encode(tags, int_blocks, m, u, d: bytes, b: bool) -> bytes:
    out = blocks([string(t) for t in tags])
    out += blocks(*[[i32(i) for i in blk] for blk in int_blocks])
    out += blocks([string(k) + (i32(0) if v is None else i32(1) + i64(v)) for k, v in m])
    if u is None:
        out += i32(0)
    elif isinstance(u, str):
        out += i32(1) + string(u)
    else:
        out += i32(2) + u
    return out + d + bytes([b])


def decode(t, values: list[bytes], exact=True):
    data = b"".join(values)
    starts = np.cumsum([0] + [len(v) for v in values[:-1]]).astype(np.int64)
    limits = starts + np.array([len(v) for v in values], dtype=np.int64)
    column, ends = t.column(T.Buf(data, "data"), starts, limits)
    if exact:
        assert ends.tolist() == limits.tolist()
    return column


def test_values_of_every_kind_in_columns():
    t = avro_type(json.dumps(REC))
    values = [
        encode(["a", "bé"], [[1, 2], [3]], [("k", 5), ("z", None)], "s", b"\xff\xff\x85", True),
        encode([], [], [], None, b"\x00\x01\x00", False),
        encode(["x" * 300], [[7]], [("k", -1)], b"\x01\x02", b"\x80\x00\x00", True),
    ]
    rows = decode(t, values).to_pylist()
    assert rows == [
        {"tags": ["a", "bé"], "ints": [1, 2, 3], "m": [("k", 5), ("z", None)],
         "u": {"string": "s", "H": None}, "d": Decimal("-1.23"), "b": True},
        {"tags": [], "ints": [], "m": [], "u": None, "d": Decimal("2.56"), "b": False},
        {"tags": ["x" * 300], "ints": [7], "m": [("k", -1)], "u": {"string": None, "H": b"\x01\x02"},
         "d": Decimal("-83886.08"), "b": True},
    ]
    # the per-value path (heap-native streams walk values with it) agrees, and finds each value's end
    for v, row in zip(values, rows):
        r = Reader(v, "data")
        got = t.read(r)
        assert r.at_end() and got["tags"] == row["tags"] and got["ints"] == row["ints"] and got["b"] == row["b"]
        assert t.skipper(T.Buf(v, "data"))(0) == len(v)


def test_an_array_of_records_in_many_rows_keeps_each_rows_order():
    t = avro_type('{"type":"array","items":{"type":"record","name":"P","fields":['
                  '{"name":"s","type":"string"},{"name":"n","type":["null","int"]}]}}')
    values = [blocks([string(f"{row}-{i}") + (i32(1) + i32(i) if i % 2 else i32(0)) for i in range(row)])
              for row in (3, 0, 5, 1)]
    rows = decode(t, values).to_pylist()
    assert rows == [[{"s": f"{row}-{i}", "n": i if i % 2 else None} for i in range(row)] for row in (3, 0, 5, 1)]


# --- damaged values -------------------------------------------------------------------

SHORT = {"type": "record", "name": "S", "fields": [
    {"name": "s", "type": "string"}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
    {"name": "u", "type": ["null", "int"]}, {"name": "a", "type": {"type": "array", "items": "long"}},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 0}}]}


def short(s=string("ok"), e=i32(0), u=i32(0), a=b"\x00", d=i32(1) + b"\x05") -> bytes:
    return s + e + u + a + d


@pytest.mark.parametrize("value, why", [
    (short(s=i32(1 << 30) + b"ok"), "a string length of 1073741824 does not fit in its value at offset 0"),
    (short(s=i32(-2)), "a string length of -2 does not fit in its value at offset 0"),
    (short(s=string(b"\xff\xfe")), "a string is not UTF-8 at offset 0"),
    (short(e=i32(1)), "enum E has no symbol 1 at offset 6"),
    (short(u=i32(2)), "a union of 2 branches has no branch 2 at offset 10"),
    (short(a=varint(1 << 40)), "array of 1099511627776 items cannot fit in the 5 bytes left of its value "
                               "at offset 14"),
    (short(a=b"\xff" * 9 + b"\x01"), "the array item count is longer than 9 bytes at offset 14"),
    (short(a=varint(2) + i64(1)), "array of 2 items cannot fit in the 13 bytes left of its value at offset 14"),
    (short(a=b"\x81", d=b""), "the array item count runs past the end of its value at offset 15"),
    (short(d=i32(17) + b"\x01" * 17), "a decimal of 17 bytes (1 to 16 hold precision 4) at offset 15"),
    (short(d=i32(2) + b"\x27\x10"), "a decimal exceeds precision 4 at offset 15"),
])
def test_a_damaged_value_is_one_error_naming_what_and_where(value, why):
    t = avro_type(json.dumps(SHORT))
    with pytest.raises(AvroDataError) as e:
        decode(t, [value], exact=False)
    assert str(e.value) == f"data: damaged Avro value: {why}"


MAIN_ST = b"\x00\x00\x00\x0a10 Main St"  # the street of acct_00's profile (key group 54, subtask 0)
PROC_STREAM = "85f38e0e-12df-4e6d-a875-b2bd5a419061"
OP_ID = "f69db5b8877c850caa207cb19d2c743f"


def damaged_line(length: int, at: int) -> str:
    return (f"error: SP/{PROC_STREAM}: operator {OP_ID} subtask 0, state 'profile', key group 54 "
            f"(Avro dev.fixtures.avro.CustomerProfile): damaged value: a string length of {length} does not "
            f"fit in its value at offset {at}")


@pytest.mark.parametrize("length, why", [
    (0x7FFFFFFF, damaged_line(0x7FFFFFFF, 10506)),
    (9, damaged_line(268435456, 10523)),  # one byte short: the fields after it are misread
])
def test_a_damaged_avro_value_fails_its_state_in_one_line(cli, tmp_path, length, why):
    sp = _copy(tmp_path)
    assert _patch(sp, MAIN_ST, i32(length) + MAIN_ST[4:]) == PROC_STREAM
    result = cli("read", str(sp), "--uid", UID, "--engine", "local")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().replace(str(sp), "SP") == why
    # the rest stays readable: info, validate, the timers, and the other states of the stream
    assert cli("info", str(sp)).returncode == 0
    assert cli("validate", str(sp)).returncode == 0
    assert cli("read", str(sp), "--uid", UID, "--timers", "--engine", "local").returncode == 0
    split = open_flink_savepoint(sp).operator(UID).keyed_splits[0]
    [(header, entries)] = list(raw_entries(split))
    others = {m.name: decode_canonical_state(m, header.key, entries[i])
              for i, m in enumerate(header.states) if m.name in ("history", "by_kind")}
    whole = {m.name: decode_canonical_state(m, header.key, raw)
             for (header, e) in raw_entries(open_flink_savepoint(FIXTURES / NAMES[0] / "savepoint")
                                            .operator(UID).keyed_splits[0])
             for i, (m, raw) in enumerate((header.states[i], r) for i, r in e.items())
             if m.name in ("history", "by_kind")}
    assert others.keys() == whole.keys() == {"history", "by_kind"}
    for name in others:
        assert others[name].values.equals(whole[name].values)


def _copy(tmp_path) -> Path:
    sp = tmp_path / "sp"
    shutil.copytree(FIXTURES / NAMES[0] / "savepoint", sp)
    for f in sp.iterdir():
        f.chmod(0o644)
    return sp


def _patch(sp: Path, old: bytes, new: bytes) -> str:
    for f in sp.iterdir():
        data = f.read_bytes()
        if old in data:
            f.write_bytes(data.replace(old, new, 1))
            return f.name
    raise AssertionError(f"{old!r} not found")


# --- writing ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_modify_carries_the_avro_states_byte_for_byte(cli, tmp_path, name):
    base = FIXTURES / name / "savepoint"
    out = tmp_path / "out"
    result = cli("modify", str(base), str(out), "--remove", "dev-avro-sink", "--self-contained")
    assert result.returncode == 0, result.stderr
    copied = {p.name.rsplit("-w", 1)[0]: p.read_bytes() for p in out.iterdir() if p.name != "_metadata"}
    assert copied == {p.name: p.read_bytes() for p in base.iterdir() if p.name != "_metadata"}
    rows = statectl.open_savepoint(str(out)).keyed(UID).to_pylist()
    assert as_model(rows, name) == expected(name)["expected"]


@pytest.mark.slow  # rescale runs Spark
@pytest.mark.parametrize("name", NAMES)
def test_rescale_moves_the_avro_states_byte_for_byte(cli, tmp_path, name):
    """Rescaling moves a DataStream operator's entries as their bytes (`statefmt/flink/regroup.py`):
    Avro values, which have no writer, keep every byte and read as the model at 256."""
    from statectl.statefmt.flink.savepoint import open_flink_savepoint, raw_entries

    def values(path):
        op = open_flink_savepoint(path).operator(UID)
        return sorted(e.buf.data[s:t] for split in op.keyed_splits for _, raw in raw_entries(split)
                      for e in raw.values() for s, t in zip(e.value_starts.tolist(), e.value_ends.tolist()))

    base, out = FIXTURES / name / "savepoint", tmp_path / "out"
    result = cli("rescale", str(base), str(out), "--max-parallelism", "256")
    assert result.returncode == 0, result.stderr
    assert open_flink_savepoint(out).operator(UID).max_parallelism == 256
    assert values(out) == values(base)
    rows = statectl.open_savepoint(str(out)).keyed(UID).to_pylist()
    assert as_model(rows, name) == expected(name)["expected"]