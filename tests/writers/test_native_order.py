"""The native writer's plan: rows grouped in the tasks, sorted by Spark in the encoding's order.

String keys whose lengths cross the varint's byte boundaries (127/128, 16383/16384)
sort by length first in the encoding; timers go through the same shuffle as the keyed
rows. The database must hold exactly the entries the scalar codec gives. Entries that
reach an SST file out of order are sorted there (a type whose Spark order differs).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.rocksdb.codec import KeyLayout, ValueCodec, key_group_prefix, timer_key
from statectl.statefmt.rocksdb.database import (TIMERS_CF, cf_options, db_options, open_snapshot_db, opened_snapshot,
                                                state_cf)
from statectl.statefmt.rocksdb.files import subtask_databases
from statectl.statefmt.formats import load
from statectl.statefmt.errors import DuplicateKeyError
from statectl.statefmt.keygroups import key_group_for_key
from statectl.statefmt.rocksdb import columnar
from statectl.statefmt.rocksdb.sst import SstFamily, build_checkpoint
from statectl.writers import KeyedData, ListState, OperatorData, SavepointWriter, Timers, \
    ValueState

MAX_P = 16
LENGTHS = [2, 3, 126, 127, 128, 129, 300, 16383, 16384, 16385]  # of the keys' UTF-8


def _rows():
    """(user, x, v, ts): two rows per key, one timer repeated."""
    out = []
    for i, n in enumerate(LENGTHS):
        for c in "ab":
            user = c * (n - 1) + str(i)
            out.append((user, i - 5, i, 1000 * i))
            out.append((user, i - 5, i + 100, 1000 * i))
    return out


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory):
    df = spark.createDataFrame(_rows(), "user string, x bigint, v bigint, ts bigint")
    events = [ListState("vs", column="v")]
    out = {}
    for fmt in ("canonical", "rocksdb"):
        path = str(tmp_path_factory.mktemp("native-order") / fmt)
        SavepointWriter.new(max_parallelism=MAX_P, format=fmt).with_operator(
            OperatorData("by-user", 2, keyed=KeyedData(
                key=["user"], data=df, states=events, timers=[Timers("event", column="ts")]))
        ).with_operator(
            OperatorData("by-pair", 3, keyed=KeyedData(
                key=["x", "user"], data=df.where("v < 100"),
                states=[ValueState("first", column="v")]))
        ).write(path, spark)
        out[fmt] = load(path)
    return out


def _entries(sp, uid, cf):
    op = sp.operator(uid)
    found = []
    for files in subtask_databases(op).values():
        with opened_snapshot(sp, files) as db:
            names = set(db.list_cf(db.path()))
            if cf in names:
                found += list(db.get_column_family(cf).items())
    return found


def test_list_state_and_timers_are_the_scalar_codec_entries(written):
    layout = KeyLayout(["string"], None)
    codec = ValueCodec("int64", nullable=True)
    by_user: dict[str, list] = {}
    for user, _, v, ts in _rows():
        by_user.setdefault(user, []).append((v, ts))
    want, timers = [], []
    for user, items in by_user.items():
        kg = key_group_for_key([user], ["string"], MAX_P)
        kns = layout.key_bytes((user,)) + layout.namespace_bytes(None)
        want.append((key_group_prefix(kg) + kns, sorted(v for v, _ in items)))
        timers += sorted({timer_key(kg, "event", ts, kns) for _, ts in items})
    got = _entries(written["rocksdb"], "by-user", state_cf("vs"))
    assert [k for k, _ in got] == sorted(k for k, _ in want)
    decoded = {k: sorted(_split(codec, value)) for k, value in got}
    assert decoded == dict(want)
    assert [k for k, _ in _entries(written["rocksdb"], "by-user", TIMERS_CF)] == sorted(timers)


def _split(codec, raw: bytes) -> list:
    out, pos = [], 0
    while pos < len(raw):
        v, pos = codec.decode_at(raw, pos)
        out.append(v)
    return out


@pytest.mark.parametrize("uid", ["by-user", "by-pair"])
def test_both_formats_read_alike(spark, written, uid):
    canonical = open_savepoint(spark, written["canonical"].location)
    native = open_savepoint(spark, written["rocksdb"].location)
    assert sorted(map(tuple, native.keyed(uid).collect())) == \
        sorted(map(tuple, canonical.keyed(uid).collect()))
    assert sorted(map(tuple, native.timers(uid).collect())) == \
        sorted(map(tuple, canonical.timers(uid).collect()))
    assert native.keyed(uid).count() == {"by-user": 20, "by-pair": 20}[uid]


def test_two_values_of_one_key_fail_the_native_write_naming_the_key(spark, tmp_path):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], "user string, v bigint")
    with pytest.raises(DuplicateKeyError) as e:
        SavepointWriter.new(max_parallelism=MAX_P, format="rocksdb").with_operator(
            OperatorData("dup", 1, keyed=KeyedData(key=["user"], data=df,
                                                    states=[ValueState("v", column="v")]))
        ).write(str(tmp_path / "dup"), spark)
    assert str(e.value) == ("operator 'dup', value state 'v': key user=a has 2 rows; a value "
                            "state holds one value per key (set combine to sum, min, max or any)")


def test_an_sst_family_sorts_entries_that_come_out_of_order(tmp_path):
    family = SstFamily("state:s", str(tmp_path / "s.sst"), cf_options())
    keys = [b"\x00\x01b", b"\x00\x01a", b"\x00\x02a", b"\x00\x02\x00"]
    family.add(pa.array(keys[:2], columnar.BIN), pa.array([b"1", b"2"], columnar.BIN),
               np.array([1, 1]))
    family.flush("op", before=2)
    family.add(pa.array(keys[2:], columnar.BIN), pa.array([b"3", b"4"], columnar.BIN),
               np.array([2, 2]))
    family.flush("op")
    checkpoint, entries = build_checkpoint([family], str(tmp_path), db_options(), cf_options())
    db = open_snapshot_db(checkpoint)
    try:
        assert list(db.get_column_family("state:s").items()) == [
            (b"\x00\x01a", b"2"), (b"\x00\x01b", b"1"), (b"\x00\x02\x00", b"4"),
            (b"\x00\x02a", b"3")]
    finally:
        db.close()
    assert sum(entries.values()) == 4


def test_an_sst_family_refuses_a_key_twice(tmp_path):
    family = SstFamily("timers", str(tmp_path / "t.sst"), cf_options())
    family.add(pa.array([b"\x00\x01a", b"\x00\x01a"], columnar.BIN), None, np.array([1, 1]))
    with pytest.raises(DuplicateKeyError) as e:
        family.flush("operator 'x'")
    assert str(e.value) == ("operator 'x': two rows for the same key, namespace and state entry "
                            "in column family 'timers'")
