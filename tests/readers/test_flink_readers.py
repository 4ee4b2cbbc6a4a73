"""The readers API on Flink savepoints: key filters, include_key_group, the catalogue, views."""

from __future__ import annotations

import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.errors import KeyTypeError
from support.flink_expect import FIXTURES, check_keyed, check_timers, expected_of, label


def _restricted(expected: dict, uid: str, labels: set[str]) -> dict:
    """expected.json with *uid*'s keyed state and timers kept to the keys *labels*."""
    exp = dict(expected["operators"][uid])
    exp["keyed_state"] = {
        name: dict(state, values=[e for e in state["values"] if e["key"] in labels]
                   if isinstance(state["values"], list)
                   else {k: v for k, v in state["values"].items() if k in labels},
                   **({"timestamps": {"bounds": {k: b for k, b in state["timestamps"]["bounds"].items()
                                                 if k in labels}}} if "timestamps" in state else {}))
        for name, state in exp["keyed_state"].items()}
    if "timers" in exp:
        exp["timers"] = {d: dict(t, values=[e for e in t["values"] if e["key"] in labels]
                                 if isinstance(t["values"], list)
                                 else {k: v for k, v in t["values"].items() if k in labels})
                         for d, t in exp["timers"].items()}
    return dict(expected, operators={**expected["operators"], uid: exp})


@pytest.mark.parametrize("name,uid", [("tuple-rocksdb-native", "tk-proc"), ("pojo-hashmap-canonical", "pj-proc"),
                                      ("long-rocksdb-canonical", "lk-win")])
def test_key_filter_reads_only_the_keys_groups(spark, name, uid):
    expected = expected_of(name)
    reader = open_savepoint(spark, str(FIXTURES / name / "savepoint"))
    wanted = sorted(expected["keys"])[:2]
    keys = [expected["keys"][k]["key"] for k in wanted]
    df = reader.keyed(uid, keys=keys, include_key_group=True)
    rows = [r.asDict(recursive=True) for r in df.collect()]
    key_names = reader.operator(uid).keyed.key_names
    assert {label(r[key_names[0]] if len(key_names) == 1 else [r[n] for n in key_names]) for r in rows} \
        == set(wanted)
    assert {r["_key_group"] for r in rows} == {expected["keys"][k]["key_group"] for k in wanted}
    restricted = _restricted(expected, uid, set(wanted))
    assert check_keyed(restricted, uid, rows, key_names, df.columns) > 0
    timers = [r.asDict(recursive=True) for r in reader.timers(uid, keys=keys, include_key_group=True).collect()]
    check_timers(restricted, uid, timers, key_names)
    # only the splits holding those key groups are planned
    from statectl.readers.datasource import SplitReader, split_options
    from statectl.readers.sources import table_source
    source = table_source(reader.savepoint, reader.operator(uid))
    plan = SplitReader(split_options(source, "keyed", sorted({r["_key_group"] for r in rows})))
    splits = [s for p in plan.partitions() for s in p.splits]
    assert splits and all(any(s.key_groups[0] <= r["_key_group"] <= s.key_groups[1] for r in rows)
                          for s in splits)


def test_key_filter_refuses_a_key_the_hash_cannot_take(spark):
    reader = open_savepoint(spark, str(FIXTURES / "pojo-hashmap-canonical" / "savepoint"))
    with pytest.raises(KeyTypeError, match="has 1 key column"):
        reader.keyed("pj-proc", keys=[("a", 1)])


def test_catalogue_and_views(spark):
    reader = open_savepoint(spark, str(FIXTURES / "long-hashmap-canonical" / "savepoint"))
    rows = {(r["uid"], r["state"]): r for r in reader.catalogue().collect()}
    count = rows[("lk-proc", "count")]
    assert (count["kind"], count["type"], count["key"], count["rows"], count["view"]) == \
        ("value", "int64", "key: int64", None, "lk-proc")
    assert rows[("lk-bcast", "rules")]["type"] == "map<string, string>"
    names = reader.register_views()
    try:
        assert names == reader.view_names() and "lk-win.timers" in names
        got = spark.sql("SELECT count(*) AS n FROM `lk-proc` WHERE count IS NOT NULL").collect()[0]["n"]
    finally:  # the suite shares one session: leave no views for other tests
        for name in names:
            spark.catalog.dropTempView(name)
    assert got == len(expected_of("long-hashmap-canonical")["operators"]["lk-proc"]["keyed_state"]["count"]["values"])


def test_keys_of_pojo_or_row_type_are_one_clear_error():
    from statectl.statefmt.flink import types as T
    from statectl.statefmt.flink.model import java_key_type

    assert java_key_type(T.Tuple("org.apache.flink.api.java.tuple.Tuple2", (T.String(), T.Scalar("int"))), "op") \
        == ("String", "Integer")
    pojo = T.Pojo("com.example.User", (("name", T.String()),), serializer="org.apache.flink.PojoSerializer")
    with pytest.raises(KeyTypeError) as e:
        java_key_type(pojo, "users")
    assert str(e.value).startswith("operator users: key filters need a String, number, boolean, char "
                                   "or tuple of these as the key; this key is ")
