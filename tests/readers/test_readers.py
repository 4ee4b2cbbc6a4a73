"""Reading every kind of state through the Python API, with exact rows and exact errors."""

from __future__ import annotations

import shutil

import pytest

from statectl.readers import open_savepoint
from support.readers_savepoints import (
    HIDDEN_ID,
    OFFSETS,
    PARTITIONS,
    build_base,
    build_derived,
)
from statectl.statefmt.errors import (
    IntegrityError,
    MissingFileError,
    UnknownOperatorError,
    UnknownStateError,
    UsageError,
)
from statectl.statefmt.ids import OperatorRef, operator_id_for_uid
from statectl.statefmt.formats import load

OPERATORS = f"src, proc, win, rules, {HIDDEN_ID} (no uid)"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    base = build_base(root / "base [v1]")
    return base, build_derived(base, root / "derived")


@pytest.fixture(scope="module")
def base(spark, saved):
    return open_savepoint(spark, saved[0].location)


def rows(df, order=None):
    """Rows as plain tuples (nested rows as dicts), sorted."""
    out = [tuple(_plain(v) for v in r) for r in df.collect()]
    return sorted(out, key=repr) if order is None else out


def _plain(v):
    if hasattr(v, "asDict"):
        return v.asDict(recursive=True)
    return v


def schema(df):
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def test_catalogue_lists_every_state_with_its_view(base):
    cat = base.catalogue().select("uid", "operator_id", "state", "scope", "kind", "type",
                                  "parallelism", "max_parallelism", "files", "rows", "view")
    proc, hidden = operator_id_for_uid("proc"), HIDDEN_ID
    assert rows(cat, order=False)[:3] == [
        ("src", operator_id_for_uid("src"), "offsets", "operator", "list", "int64", 3, 128, 1, 3,
         "src.offsets"),
        ("src", operator_id_for_uid("src"), "partitions", "operator", "union", "string", 3, 128,
         1, 4, "src.partitions"),
        ("proc", proc, "count", "keyed", "value", "int64", 2, 8, 2, 6, "proc"),
    ]
    brief = [(r.uid, r.state, r.kind, r.type, r.view) for r in cat.collect()]
    assert brief[3:] == [
        ("proc", "events", "list", "list<string>", "proc"),
        ("proc", "attrs", "map", "map<string, int64>", "proc"),
        ("proc", "total", "reducing", "float64", "proc"),
        ("proc", "acc", "aggregating", "struct<sum: float64, n: int64>", "proc"),
        ("proc", "seen", "value", "timestamp[us, UTC]", "proc"),
        ("proc", None, "timers", "timestamp: int64, domain: string", "proc.timers"),
        ("win", "clicks", "value", "int64", "win"),
        ("win", None, "timers", "timestamp: int64, domain: string", "win.timers"),
        ("rules", "rules", "broadcast", "map<string, int32>", "rules.rules"),
        (None, "v", "value", "int32", hidden),
        (None, None, "timers", "timestamp: int64, domain: string", f"{hidden}.timers"),
    ]
    files = base.savepoint.operator("proc").keyed.files
    assert base.catalogue().filter("view = 'proc'").select("bytes").distinct().collect()[0][0] == \
        sum(f.size for f in files)


def test_keyed_table_has_key_then_one_typed_column_per_state(base):
    from pyspark.sql import functions as F

    df = base.keyed("proc")
    assert schema(df) == [
        ("user", "string"), ("count", "bigint"), ("events", "array<string>"),
        ("attrs", "map<string,bigint>"), ("total", "double"),
        ("acc", "struct<sum:double,n:bigint>"), ("seen", "timestamp"),
    ]
    got = rows(df.withColumn("seen", F.unix_micros("seen")))
    t0 = 1714564800 * 1_000_000
    assert got == sorted([
        ("u0", 3, ["a", "b"], {"x": 1}, 1.5, {"sum": 3.0, "n": 2}, t0),
        ("u1", None, ["c"], None, 2.0, None, None),
        ("u2", 7, None, {"y": 2, "z": 3}, None, {"sum": 1.0, "n": 1}, t0 + 1_000_000),
        ("u3", None, None, None, 4.25, None, None),
        ("u4", 0, [], {}, None, None, None),
        ("u5", 12, ["d", None], {"w": None}, 0.0, {"sum": 0.0, "n": 0}, t0),
    ], key=repr)


def test_chosen_states_keep_only_keys_with_a_value_in_them(base):
    df = base.keyed("proc", states=["total", "count"])
    assert df.columns == ["user", "total", "count"]
    assert rows(df) == sorted([("u0", 1.5, 3), ("u1", 2.0, None), ("u2", None, 7),
                               ("u3", 4.25, None), ("u4", None, 0), ("u5", 0.0, 12)], key=repr)
    assert rows(base.keyed("proc", "attrs")) == sorted(
        [("u0", {"x": 1}), ("u2", {"y": 2, "z": 3}), ("u4", {}), ("u5", {"w": None})], key=repr)


def test_namespaces_and_composite_keys(base):
    df = base.keyed("win")
    assert schema(df) == [("user", "string"), ("shard", "int"),
                          ("namespace", "struct<start:bigint,end:bigint>"), ("clicks", "bigint")]
    assert rows(df) == sorted([
        ("a", 1, {"start": 0, "end": 10}, 5), ("a", 1, {"start": 10, "end": 20}, 7),
        ("a", 2, {"start": 0, "end": 10}, 1), ("b", 1, {"start": 0, "end": 10}, 2)], key=repr)


def test_timers_with_and_without_namespace(base):
    assert base.timers("proc").columns == ["user", "timestamp", "domain"]
    assert rows(base.timers("proc")) == [("u0", 1000, "event"), ("u1", 2000, "processing"),
                                         ("u2", 3000, "event")]
    assert rows(base.timers("proc", domain="processing")) == [("u1", 2000, "processing")]
    assert rows(base.timers("win")) == [("a", 1, {"start": 0, "end": 10}, 9, "event"),
                                        ("b", 1, {"start": 0, "end": 10}, 9, "event")]
    assert rows(base.timers(HIDDEN_ID)) == []


def test_key_group_range_reads_only_its_files(base, saved):
    sp = saved[0]
    files = sp.operator("proc").keyed.files
    assert [f.key_groups for f in files] == [(0, 3), (4, 7)]
    whole = base.keyed("proc", include_key_group=True)
    assert whole.columns[0] == "_key_group"
    low = base.keyed("proc", key_groups=(0, 3), include_key_group=True)
    assert rows(low) == sorted(r for r in rows(whole) if r[0] <= 3)
    assert len(low.inputFiles()) == 1 and low.inputFiles()[0].endswith(files[0].ref.path)
    with pytest.raises(UsageError, match=r"key_groups must be \(first, last\)"):
        base.keyed("proc", key_groups=(5, 2))


def test_operator_list_union_and_broadcast_state(base):
    assert base.list_state("src", "offsets").columns == ["value"]
    assert rows(base.list_state("src", "offsets")) == sorted((v,) for _, v in OFFSETS)
    union = base.union_state("src", "partitions")
    assert rows(union) == sorted((v,) for _, v in PARTITIONS)  # the union once, not per subtask
    broadcast = base.broadcast_state("rules", "rules")
    assert schema(broadcast) == [("key", "string"), ("value", "int")]
    assert rows(broadcast) == [("r1", 1), ("r2", 2)]  # one copy, whatever the parallelism
    assert rows(base.operator_state("rules", "rules")) == [("r1", 1), ("r2", 2)]


def test_operator_known_only_by_id(base):
    expected = [(1, 100), (2, 200), (3, None)]
    assert rows(base.keyed(OperatorRef(operator_id=HIDDEN_ID))) == expected
    assert rows(base.keyed(HIDDEN_ID.upper())) == expected


def test_shallow_copy_reads_files_from_the_base(spark, saved, base):
    derived_sp = saved[1]
    derived = open_savepoint(spark, derived_sp.location)
    assert derived_sp.operator("proc").keyed.files[0].ref.savepoint == saved[0].savepoint_id
    df = derived.keyed("proc", "count")
    assert rows(df) == rows(base.keyed("proc", "count"))
    assert all("base%20%5Bv1%5D" in f for f in df.inputFiles())
    assert rows(derived.timers("proc")) == rows(base.timers("proc"))
    assert rows(derived.list_state("sink", "pending")) == [("x",), ("y",)]


def test_unknown_operators_and_states_list_what_is_there(base):
    with pytest.raises(UnknownOperatorError) as e:
        base.keyed("nope")
    assert str(e.value) == f"no operator with uid 'nope'; operators: {OPERATORS}"
    with pytest.raises(UnknownOperatorError, match=f"^no operator with operator id {'0' * 32}; "):
        base.keyed(OperatorRef(operator_id="0" * 32))
    with pytest.raises(UnknownStateError) as e:
        base.keyed("proc", ["count", "cnt"])
    assert str(e.value) == ("operator proc has no keyed state 'cnt'; it has keyed states: "
                            "count, events, attrs, total, acc, seen")
    with pytest.raises(UnknownStateError) as e:
        base.keyed("src")
    assert str(e.value) == ("operator src has no keyed state; it has operator states: "
                            "offsets (list), partitions (union)")
    with pytest.raises(UnknownStateError) as e:
        base.timers("rules")
    assert str(e.value) == ("operator rules has no keyed state; it has operator states: "
                            "rules (broadcast)")
    with pytest.raises(UnknownStateError) as e:
        base.operator_state("src", "offset")
    assert str(e.value) == ("operator src has no operator state 'offset'; it has operator "
                            "states: offsets (list), partitions (union)")
    with pytest.raises(UnknownStateError) as e:
        base.union_state("src", "offsets")
    assert str(e.value) == "operator state 'offsets' of src is list state, not union state"
    with pytest.raises(UsageError, match="timer domain must be one of event, processing"):
        base.timers("proc", domain="wall")


def test_sql_over_every_view(base, spark):
    got = base.sql("SELECT p.user, p.count, t.timestamp FROM proc p "
                   "JOIN `proc.timers` t ON p.user = t.user WHERE t.domain = 'event'")
    assert rows(got) == [("u0", 3, 1000), ("u2", 7, 3000)]
    assert rows(base.sql("SELECT sum(value) FROM `src.offsets`")) == [(41,)]
    assert rows(base.sql(f"SELECT v FROM `{HIDDEN_ID}` WHERE id = 2")) == [(200,)]
    assert rows(base.sql("SELECT count(*) FROM catalogue WHERE scope = 'keyed'")) == [(11,)]
    assert [t.name for t in spark.catalog.listTables() if t.isTemporary] == []
    with pytest.raises(UsageError) as e:
        base.sql("SELECT * FROM offsets")
    assert str(e.value).startswith("query failed: [TABLE_OR_VIEW_NOT_FOUND] The table or view "
                                   "`offsets` cannot be found.")
    assert str(e.value).endswith(
        "Views: `src.offsets`, `src.partitions`, proc, `proc.timers`, win, `win.timers`, "
        f"`rules.rules`, `{HIDDEN_ID}`, `{HIDDEN_ID}.timers`, catalogue")


def test_registered_views(spark, saved):
    reader = open_savepoint(spark, saved[1].location)
    names = ["proc", "proc.timers", "sink.pending", "catalogue"]
    assert reader.register_views() == names
    try:
        assert rows(spark.sql("SELECT value FROM `sink.pending`")) == [("x",), ("y",)]
        assert rows(spark.sql("SELECT count(*) FROM `proc.timers`")) == [(3,)]
    finally:
        assert all(spark.catalog.dropTempView(name) for name in names)


def _path(sp, uid, state=None):
    op = sp.operator(uid)
    f = op.keyed.files[0] if state is None else op.operator_state(state).files[0]
    return sp.location + "/" + f.ref.path


def test_damaged_and_missing_files_are_errors_naming_the_file(spark, tmp_path):
    sp = build_base(tmp_path / "sp #1 [x] 100% {a,b}")
    altered, truncated = _path(sp, "proc"), _path(sp, "src", "offsets")
    data = bytearray(open(altered, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(altered, "wb").write(bytes(data))
    open(truncated, "r+b").truncate(100)
    reader = open_savepoint(spark, sp.location)
    with pytest.raises(IntegrityError) as e:
        reader.keyed("proc")
    assert str(e.value) == f"{altered}: checksum mismatch (file altered or corrupt)"
    with pytest.raises(IntegrityError) as e:
        reader.list_state("src", "offsets")
    size = sp.operator("src").operator_state("offsets").files[0].size
    assert str(e.value) == (f"{truncated}: size is 100 bytes, _metadata records {size} "
                            "(truncated or replaced file)")
    assert rows(reader.union_state("src", "partitions")) == sorted((v,) for _, v in PARTITIONS)
    # a query reading only sound files runs; one touching a damaged file does not
    assert rows(reader.sql("SELECT key FROM `rules.rules`")) == [("r1",), ("r2",)]
    with pytest.raises(IntegrityError, match="checksum mismatch"):
        reader.sql("SELECT count(*) FROM proc")


def test_a_gone_base_is_a_missing_file_error(spark, tmp_path):
    base_sp = build_base(tmp_path / "base")
    derived_sp = build_derived(base_sp, tmp_path / "derived")
    shutil.rmtree(tmp_path / "base")
    reader = open_savepoint(spark, load(derived_sp.location))
    assert rows(reader.list_state("sink", "pending")) == [("x",), ("y",)]
    with pytest.raises(MissingFileError) as e:
        reader.keyed("proc")
    first = sorted(f.ref.path for f in derived_sp.operator("proc").keyed.files)[0]
    assert str(e.value) == f"{tmp_path}/base/{first}: file is missing (and 1 more damaged file(s))"
    assert rows(reader.sql("SELECT value FROM `sink.pending`")) == [("x",), ("y",)]
    with pytest.raises(MissingFileError, match=f"^{tmp_path}/base/.*: file is missing"):
        reader.sql("SELECT * FROM `proc.timers`")


def test_files_are_checked_in_executors_too(spark, tmp_path):
    """Local mode checks in driver threads; a cluster in executors: both find the same."""
    from statectl.readers.files import splits
    from statectl.readers.verify import verify_splits
    from statectl.statefmt.canonical import keyed_schema

    sp = build_base(tmp_path / "sp")
    keyed = sp.operator("proc").keyed
    parts = splits(sp, keyed.files, keyed_schema(keyed))
    for in_executors in (True, False):
        verify_splits(spark, parts, in_executors=in_executors)
    with open(parts[1].location.uri, "ab") as f:
        f.write(b"x")
    for in_executors in (True, False):
        with pytest.raises(IntegrityError) as e:
            verify_splits(spark, parts, in_executors=in_executors)
        assert str(e.value) == (f"{parts[1].location}: size is {parts[1].file.size + 1} bytes, "
                                f"_metadata records {parts[1].file.size} (truncated or replaced file)")


def test_the_views_a_query_names_are_found_in_its_text():
    """Plain or between backticks (a backtick of the name doubled), in any case: a superset."""
    from statectl.readers.catalogue import View
    from statectl.readers.reader import _named_in

    candidates = [View(name, None) for name in ("proc", "proc.timers", "a`b", "win")]
    named = _named_in("SELECT * FROM `A``B` JOIN `Proc.Timers` USING (user)", candidates)
    assert [v.name for v in named] == ["proc", "proc.timers", "a`b"]
