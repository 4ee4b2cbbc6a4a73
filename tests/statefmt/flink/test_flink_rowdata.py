"""The table runtime's RowData, read exactly as real Flink wrote it.

Flink 1.20 and 2.3 wrote every SQL type's `RowDataSerializer` snapshot and rows (every
RowKind, nulls, edge values, wide rows, nested arrays, maps and rows) with the values they
hold (`tests/support/flink_rowdata.py`, `RowDataSamples.java`); statectl parses each snapshot to the
byte Flink says it ends at and decodes every row to exactly those values.
"""

from __future__ import annotations

import datetime
import json
import math
import struct

import numpy as np
import pytest

from support import flink_rowdata
from statectl.statefmt.errors import FlinkFormatError, UnsupportedFlinkFeature
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.rowdata import ROW_KIND_FIELD, RowData
from statectl.statefmt.flink.serializers import read_top_snapshot
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.types import Buf

VERSIONS = ("1.20.3", "2.3.0")
KINDS = {None: "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}


@pytest.fixture(scope="module", params=VERSIONS)
def samples(request):
    folder = flink_rowdata.make_samples(request.param)
    return folder, json.loads((folder / "cases.json").read_text())


def _case(samples, name):
    folder, cases = samples
    case = next(c for c in cases if c["name"] == name)
    return case, (folder / case["file"]).read_bytes()


def _decode(data: bytes, case: dict):
    """(the parsed type, the decoded values, the snapshot's length) of one sample file."""
    r = Reader(data, case["file"])
    t = read_top_snapshot(r)
    snapshot_length = r.pos
    count = r.int()
    buf = Buf(data, case["file"])
    starts, pos = [], r.pos
    skip = t.skipper(buf)
    for _ in range(count):
        starts.append(pos)
        pos = skip(pos)
    assert pos == len(data)
    values, ends = t.column(buf, np.array(starts, dtype=np.int64))
    assert ends.tolist() == starts[1:] + [len(data)]
    return t, values.to_pylist(), snapshot_length


def _plain(sql, value):
    """A decoded value in the samples' canonical JSON form."""
    if value is None:
        return None
    root = sql.root
    if root in ("FLOAT", "DOUBLE"):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if root == "DECIMAL":
        return format(value, "f")
    if root in ("BINARY", "VARBINARY"):
        return value.hex()
    if root == "DATE":
        return (value - datetime.date(1970, 1, 1)).days
    if root == "TIME_WITHOUT_TIME_ZONE":
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
    if root in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        return _epoch_nanos(value)
    if root == "ARRAY":
        return [_plain(sql.children[0], v) for v in value]
    if root in ("MAP", "MULTISET"):
        value_type = sql.children[1] if root == "MAP" else None
        return [[_plain(sql.children[0], k), v if value_type is None else _plain(value_type, v)]
                for k, v in value]
    if root in ("ROW", "STRUCTURED_TYPE"):
        return {n: _plain(c, value[n]) for n, c in zip(sql.names, sql.children)}
    if root == "RAW":
        return value.hex()
    return value


def _expected(sql, value):
    """A sample's canonical JSON value, with timestamps as epoch nanos and dates as days."""
    if value is None:
        return None
    root = sql.root
    if root == "DATE":
        return value["days"]
    if root in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        return value["epoch_nanos"]
    if root == "ARRAY":
        return [_expected(sql.children[0], v) for v in value]
    if root in ("MAP", "MULTISET"):
        value_type = sql.children[1] if root == "MAP" else None
        return [[_expected(sql.children[0], k), v if value_type is None else _expected(value_type, v)]
                for k, v in value]
    if root in ("ROW", "STRUCTURED_TYPE"):
        return {n: _expected(c, value[n]) for n, c in zip(sql.names, sql.children)}
    if root == "RAW":
        return value["hex"]
    return value


def _compare_rows(t: RowData, decoded: list[dict], case: dict) -> None:
    for i, (row, want) in enumerate(zip(decoded, case["rows"])):
        assert KINDS[row[ROW_KIND_FIELD]] == want["kind"], f"row {i}"
        for j, sql in enumerate(t.fields):
            got = row[f"f{j}"]
            assert _plain(sql, got) == _expected(sql, want["values"][j]), \
                f"{case['name']} row {i} field {j} ({sql.sql()})"


def _epoch_nanos(value) -> int:
    """A decoded timestamp (datetime to the microsecond, or pandas' Timestamp to the nanosecond)."""
    if hasattr(value, "value"):
        return value.value
    epoch = datetime.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    delta = value - epoch
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000


ROW_CASES = ["scalars", "scalars_not_null", "decimals", "strings", "binaries", "temporal", "intervals",
             "arrays", "array_elements", "maps", "nested", "all_null", "wide_56", "wide_57", "wide_70",
             "empty_row", "raw", "structured"]


NS_RANGE = (-(2**63), 2**63 - 1)


def _outside_nanos(t: RowData, row: dict) -> bool:
    """Whether a row holds a TIMESTAMP(7..9) that nanoseconds since the epoch cannot hold."""
    return any(f.root.startswith("TIMESTAMP") and f.precision > 6 and v is not None
               and not NS_RANGE[0] <= v["epoch_nanos"] <= NS_RANGE[1]
               for f, v in zip(t.fields, row["values"]))


@pytest.mark.parametrize("name", ROW_CASES)
def test_rows_read_as_flink_wrote_them(samples, name):
    case, data = _case(samples, name)
    r = Reader(data, case["file"])
    t = read_top_snapshot(r)
    assert r.pos == case["snapshot_length"]
    assert isinstance(t, RowData)
    assert [(f.root, f.nullable) for f in t.fields] == [(f["root"], f["nullable"]) for f in case["fields"]]
    starts = _row_starts(data, case)
    assert len(starts) == len(case["rows"])
    buf = Buf(data, case["file"])
    outside = [_outside_nanos(t, row) for row in case["rows"]]
    for i in np.nonzero(outside)[0]:  # years 0001 and 9999 at nanosecond precision: refused, not wrapped
        with pytest.raises(UnsupportedFlinkFeature, match=r"outside the years 1678-2261"):
            t.column(buf, starts[i:i + 1])
    keep = ~np.array(outside, dtype=bool)
    column, ends = t.column(buf, starts[keep])
    assert ends[-1] == len(data) or not keep[-1]
    _compare_rows(t, column.to_pylist(), {**case, "rows": [r for r, k in zip(case["rows"], keep) if k]})


def _row_starts(data: bytes, case) -> np.ndarray:
    r = Reader(data, case["file"])
    read_top_snapshot(r)
    n = r.int()
    starts, pos = [], r.pos
    for _ in range(n):
        starts.append(pos)
        pos += 4 + struct.unpack_from(">i", data, pos)[0]
    assert pos == len(data)
    return np.array(starts, dtype=np.int64)


@pytest.mark.parametrize("name", [c for c in ROW_CASES if c not in ("raw", "structured")])
def test_sql_types_are_named_as_flink_names_them(samples, name):
    case, data = _case(samples, name)
    t = read_top_snapshot(Reader(data, case["file"]))
    assert [f.sql() for f in t.fields] == [f["type"] for f in case["fields"]]


@pytest.mark.parametrize("name", ["map_of_row_lists", "list_of_rows"])
def test_rows_inside_maps_and_lists(samples, name):
    case, data = _case(samples, name)
    t, decoded, snapshot_length = _decode(data, case)
    assert snapshot_length == case["snapshot_length"]
    assert isinstance(t, (T.Map, T.List))
    assert len(decoded) == len(case["values"])
    row_types = [t.key, t.value.element] if isinstance(t, T.Map) else [t.element]
    assert all(isinstance(x, RowData) for x in row_types)

    def got_row(rt, row):
        return None if row is None else \
            [KINDS[row[ROW_KIND_FIELD]]] + [_plain(f, row[f"f{i}"]) for i, f in enumerate(rt.fields)]

    def want_row(rt, row):
        return None if row is None else [row["kind"]] + [_expected(f, v) for f, v in zip(rt.fields, row["values"])]

    def rows(rt, items, convert):
        return None if items is None else [convert(rt, x) for x in items]

    for got, want in zip(decoded, case["values"]):
        if isinstance(t, T.Map):
            element = t.value.element
            assert [[got_row(t.key, k), rows(element, v, got_row)] for k, v in got] == \
                [[want_row(t.key, k), rows(element, v, want_row)] for k, v in want]
        else:
            assert rows(t.element, got, got_row) == rows(t.element, want, want_row)


def test_a_row_running_past_its_bytes_is_one_error(samples):
    case, data = _case(samples, "strings")
    starts = _row_starts(data, case)
    r = Reader(data, case["file"])
    t = read_top_snapshot(r)
    first = int(starts[0])
    size = struct.unpack_from(">i", data, first)[0]
    cut = bytearray(data[:first + 4 + size])
    # a variable-length slot pointing past the row: the first field's offset grown beyond it
    slot = first + 4 + 8  # one null-bits word, then the first field's slot
    word = struct.unpack_from("<Q", cut, slot)[0]
    if word >> 63:  # inline: make it an out-of-line value far away
        word = (4096 << 32) | 5
    else:
        word = ((word >> 32) + 4096 << 32) | (word & 0xFFFFFFFF)
    struct.pack_into("<Q", cut, slot, word)
    with pytest.raises(FlinkFormatError, match="lies outside its row or array"):
        t.column(Buf(bytes(cut), "x"), np.array([first], dtype=np.int64))
