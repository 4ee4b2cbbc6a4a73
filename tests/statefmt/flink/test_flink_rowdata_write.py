"""BinaryRowData written as Flink writes it, and the key groups of SQL operators' key rows.

`encode_row` of a row's decoded values gives exactly the bytes Flink 1.20 and 2.3 wrote
(`RowDataSamples.java`), for every row whose fields it encodes; the key group computed from
a key row is the one stored with it, for every key of the suite's SQL savepoints; a key
filter (`read --key`) on a SQL operator reads exactly that key.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flink_job
import flink_rowdata
from statectl.statefmt.errors import KeyTypeError
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.rowdata import ROW_KINDS, RowData
from statectl.statefmt.flink.rowdata_write import encode_row, row_key_group
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint
from statectl.statefmt.flink.serializers import read_top_snapshot
from statectl.statefmt.flink.sqltypes import SqlType
from statectl.statefmt.flink.types import Buf

PROBE = Path(__file__).parents[2] / "fixtures" / "flink-sql-probe"
ENCODED = ["scalars", "scalars_not_null", "strings", "binaries", "all_null", "wide_56", "wide_57",
           "wide_70", "empty_row", "intervals"]
KIND = {None: 0, **{k: i for i, k in enumerate(ROW_KINDS) if i}}


@pytest.mark.parametrize("version", ("1.20.3", "2.3.0"))
@pytest.mark.parametrize("name", ENCODED)
def test_rows_encode_to_flinks_bytes(version, name):
    folder = flink_rowdata.make_samples(version)
    data = (folder / f"{name}.bin").read_bytes()
    r = Reader(data, name)
    t = read_top_snapshot(r)
    count = r.int()
    buf = Buf(data, name)
    pos = r.pos
    for _ in range(count):
        size = struct.unpack_from(">i", data, pos)[0]
        flinks = data[pos + 4:pos + 4 + size]
        row = t.column(buf, np.array([pos]))[0].to_pylist()[0]
        values = [row[f"f{i}"] for i in range(len(t.fields))]
        assert encode_row(values, t.fields, KIND[row["_rowkind"]]) == flinks
        pos += 4 + size


def _sql_key_rows():
    """(savepoint, operator) of every keyed SQL operator the suite reads: the probe's and the job's."""
    out = [(PROBE / fmt) for fmt in ("hashmap-canonical", "rocksdb-native")]
    out += [s.path for s in flink_job.make_sql_snapshots("2.3.0")[:1]]
    return out


def test_key_groups_of_sql_keys_are_flinks():
    checked = 0
    for path in _sql_key_rows():
        fsp = open_flink_savepoint(path)
        for op in fsp.operators:
            if op.keyed_header is None or not isinstance(op.key_type, RowData):
                continue
            table = keyed_table(op)
            names = [f"f{i}" for i in range(len(op.key_type.fields))]
            for row in table.select(["_key_group", *names]).to_pylist():
                values = [row[n] for n in names]
                assert row_key_group(values, op.key_type.fields, op.max_parallelism) == row["_key_group"]
                checked += 1
    assert checked > 4000


def test_key_filter_on_a_sql_operator(cli):
    path = str(PROBE / "rocksdb-native")
    out = cli("read", path, "--name", "GroupAggregate[40]", "--key", "35", "--key", "857", "-f", "jsonl")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.strip().splitlines()) == [
        '{"f0":35,"accState":{"f0":15,"f1":9498118,"f2":"fb566","_rowkind":null}}',
        '{"f0":857,"accState":{"f0":28,"f1":15471268,"f2":"f410b","_rowkind":null}}']
    bad = cli("read", path, "--name", "GroupAggregate[40]", "--key", '"x"')
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: operator 0380c0c2e041cd487c346c42780dbadd: key filter: 'x' is not a value of INT")


FIELDS = (SqlType("INTEGER"), SqlType("BIGINT"), SqlType("VARCHAR", length=2147483647),
          SqlType("DOUBLE"), SqlType("BOOLEAN"), SqlType("VARBINARY", length=100))


@settings(max_examples=200, deadline=None)
@given(st.tuples(st.none() | st.integers(-2**31, 2**31 - 1), st.none() | st.integers(-2**63, 2**63 - 1),
                 st.none() | st.text(max_size=40), st.none() | st.floats(allow_nan=False),
                 st.none() | st.booleans(), st.none() | st.binary(max_size=30)),
       st.integers(0, 3))
def test_encode_then_decode_is_identity(values, kind):
    row = encode_row(list(values), FIELDS, kind)
    framed = struct.pack(">i", len(row)) + row
    got = RowData(FIELDS).column(Buf(framed, "x"), np.array([0]))[0].to_pylist()[0]
    assert [got[f"f{i}"] for i in range(len(FIELDS))] == list(values)
    assert got["_rowkind"] == (None if kind == 0 else ROW_KINDS[kind])
    assert len(row) % 8 == 0


def test_unencodable_key_types_are_one_error():
    with pytest.raises(KeyTypeError, match="cannot be encoded here"):
        encode_row([[1]], (SqlType("ARRAY", children=(SqlType("INTEGER"),)),))
