"""remap's value conversions without Flink: a canonical keyed stream written with OLD's types
(`KeyedStreamBuilder`), its values rewritten with NEW's (`writers/flink/convert.py`), read back by
NEW's header; the keys, their key groups and every other state's bytes unchanged."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import LIST_SERIALIZER, MAP_SERIALIZER, NAMED, VOID
from statectl.statefmt.flink.encode import encode, null_flagged
from statectl.statefmt.flink.handles import KeyGroupsStream, RelativeFile
from statectl.statefmt.flink.headers import StateMeta, read_keyed_header
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.snapshot_write import keyed_header
from statectl.statefmt.flink.sqltypes import SqlType
from statectl.statefmt.flink.stream_write import KEY, KEY_GROUP, KeyedStreamBuilder, StreamState, row_schema
from statectl.statefmt.flink.streams import decode_canonical_state, scan_canonical
from statectl.statefmt.flink.types import Buf
from statectl.writers.flink.conform import conform
from statectl.writers.flink.convert import converted_body

LONG, INT, FLOAT, DOUBLE, STRING = (NAMED[n] for n in ("Long", "Integer", "Float", "Double", "String"))
NS = VOID
ROW_SERIALIZER = "org.apache.flink.api.java.typeutils.runtime.RowSerializer"
MAXP = 128
KEYS = list(range(40))


def meta(name, kind, value):
    return StateMeta(name, kind, value, NS)


OLD = [meta("count", "value", INT), meta("keep", "value", STRING),
       meta("row", "value", T.Row((("f0", INT),), serializer=ROW_SERIALIZER)),
       meta("seen", "list", T.List(INT, serializer=LIST_SERIALIZER)),
       meta("m", "map", T.Map(STRING, FLOAT, serializer=MAP_SERIALIZER))]
NEW = [meta("count", "value", LONG), OLD[1],
       meta("row", "value", T.Row((("f0", LONG), ("f1", STRING)), serializer=ROW_SERIALIZER)),
       meta("seen", "list", T.List(LONG, serializer=LIST_SERIALIZER)),
       meta("m", "map", T.Map(STRING, DOUBLE, serializer=MAP_SERIALIZER))]
ACC_OLD = RowData((SqlType("DECIMAL", precision=10, scale=2), SqlType("BIGINT", False)))
ACC_NEW = RowData((SqlType("DECIMAL", precision=12, scale=2), SqlType("BIGINT", False), SqlType("BIGINT")))


def _values(i):
    n = len(KEYS)
    k = np.array(KEYS)
    cols = [encode(INT, pa.array(k * 1000, pa.int32())), encode(STRING, pa.array([f"s{x}" for x in k])),
            encode(OLD[2].value, pa.array([{"f0": int(x)} for x in k], OLD[2].value.arrow())), None, None]
    return cols[i] if cols[i] is not None else pa.nulls(n, pa.binary())


def old_stream() -> tuple[bytes, KeyGroupsStream]:
    """OLD's stream of one subtask (all key groups): a value per key for the value states, two
    list elements per key, two map entries per key."""
    keys = pa.array(np.array(KEYS, np.int64))
    keyns = encode(LONG, keys).cast(pa.binary())
    keyns = pa.array([b + b"\x00" for b in keyns.to_pylist()], pa.binary())  # VoidNamespace: one 0 byte
    kg = pa.array(np.array(KEYS, np.int32) % MAXP)
    states = [StreamState(m.name, m.kind, m.name, ordered=m.kind == "list") for m in OLD]
    schema = row_schema(states)
    tables = []
    for rep in range(2):  # the list's and map's second element / entry; value states once
        cols = {KEY_GROUP: kg, KEY: keyns}
        for i, m in enumerate(OLD):
            cols[f"_v{i}"] = _values(i) if rep == 0 else pa.nulls(len(KEYS), pa.binary())
        cols["_v3"] = encode(INT, pa.array([x + rep for x in KEYS], pa.int32()))
        cols["_o3"] = pa.array([rep] * len(KEYS), pa.int64())
        cols["_v4"] = null_flagged(FLOAT, pa.array([x / 2 if rep else None for x in KEYS], pa.float32()), "m")
        cols["_u4"] = encode(STRING, pa.array([f"u{rep}"] * len(KEYS)))
        tables.append(pa.table({f.name: cols[f.name].cast(f.type) for f in schema}, schema=schema))
    entries = pa.concat_tables(tables).sort_by([(KEY_GROUP, "ascending"), (KEY, "ascending")])
    builder = KeyedStreamBuilder(keyed_header(LONG, OLD), states, LONG, MAXP, (0, MAXP - 1))
    data = builder.start() + builder.add(entries) + builder.finish()
    return data, KeyGroupsStream("canonical", 0, builder.key_group_offsets(), RelativeFile("s", len(data)))


def _read(data: bytes, offsets) -> dict:
    header = read_keyed_header(data, "s")
    handle = KeyGroupsStream("canonical", 0, offsets, RelativeFile("s", len(data)))
    from statectl.statefmt.flink.describe import key_group_blocks
    raw = scan_canonical(Buf(data, "s"), header, key_group_blocks(handle, len(data)), 1)
    return {header.states[i].name: decode_canonical_state(header.states[i], header.key, r) for i, r in raw.items()}


def test_values_are_rewritten_by_news_serializers_and_the_rest_kept():
    data, handle = old_stream()
    header = read_keyed_header(data, "s")
    new_header = keyed_header(LONG, NEW)
    targets = {m.name: m for m in NEW if m.name != "keep"}
    body, offsets = converted_body(data, header, header.length, handle, MAXP, targets, {}, 0, "s")
    out = new_header + body
    got = _read(out, tuple(int(o) + len(new_header) if h else 0 for o, h in zip(offsets, handle.offsets)))
    before = _read(data, handle.offsets)
    assert got["keep"].values.equals(before["keep"].values) and got["keep"].keyns.binary().equals(before["keep"].keyns.binary())
    assert got["count"].values.to_pylist() == [x * 1000 for x in KEYS] and got["count"].values.type == pa.int64()
    assert got["row"].values.to_pylist() == [{"f0": x, "f1": None} for x in KEYS]
    assert got["seen"].values.to_pylist() == [[x, x + 1] for x in KEYS]
    assert got["m"].values.to_pylist()[3] == [("u0", None), ("u1", 1.5)]
    assert np.array_equal(got["count"].key_groups, before["count"].key_groups)


def test_a_sql_row_widened_and_grown_with_an_initial_value():
    rows = pa.array([{"f0": decimal.Decimal(f"{x}.25"), "f1": x, "_rowkind": None} for x in range(3)], ACC_OLD.arrow())
    old = Buf(encode(ACC_OLD, rows).cast(pa.binary()).to_pylist()[2], "v")
    decoded, _ = ACC_OLD.column(old, np.array([0]))
    new = encode(ACC_NEW, conform(decoded, ACC_NEW.arrow(), {"f2": 0}))
    back, _ = ACC_NEW.column(Buf(new.to_pylist()[0], "v"), np.array([0]))
    assert back.to_pylist() == [{"f0": decimal.Decimal("2.25"), "f1": 2, "f2": 0, "_rowkind": None}]


def test_a_value_that_does_not_fit_is_one_line():
    with pytest.raises(Exception, match="does not convert"):
        conform(pa.array([2 ** 40]), pa.int32())


def test_ttl_switched_on_stamps_each_value_and_off_drops_the_stamp():
    ttl = T.Ttl(LONG, "TtlSerializer").arrow()
    on = conform(pa.array([1, None], pa.int32()), ttl, now_ms=99)
    assert on.to_pylist() == [{T.TTL_FIELD: 99, "value": 1}, None]
    assert conform(on, pa.int64()).to_pylist() == [1, None]


def test_an_initial_value_of_the_wrong_type_is_refused():
    with pytest.raises(Exception, match="initial value"):
        conform(pa.array([{"f0": 1}]), pa.struct([("f0", pa.int64()), ("f1", pa.int64())]), {"f1": "x"})


def test_a_compressed_stream_is_refused_before_anything():
    import dataclasses
    data, handle = old_stream()
    header = dataclasses.replace(read_keyed_header(data, "s"), compressed=True)
    with pytest.raises(UsageError, match="compressed"):
        converted_body(data, header, header.length, handle, MAXP, {"count": NEW[0]}, {}, 0, "s")
