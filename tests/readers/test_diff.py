"""`diff_savepoints` and `statectl diff`: metadata differences, and table content compared by key."""

from __future__ import annotations

import json
import os

import pytest
from pyspark.sql import functions as F

from support.cli_runner import statectl, statectl_process
from statectl.readers.diff import MetadataChange, diff_savepoints
from statectl.writers import (
    BroadcastState,
    KeyedData,
    ListState,
    MapState,
    OperatorData,
    OperatorListState,
    SavepointWriter,
    Timers,
    UnionListState,
    ValueState,
)
from statectl.writers.rescale import rescale

KEYS = 40


def _write(spark, path, fmt="canonical", changed_key=None, with_attrs=True, parallelism=2):
    """The test job's savepoint; *changed_key* (user, win) gets count + 1000."""
    events = spark.createDataFrame(
        [(f"u{i % KEYS}", i % 3, i, f"e{i}", f"k{i % 5}", i * 1000) for i in range(KEYS * 3)],
        "user string, win int, n bigint, event string, attr string, ts bigint")
    counts = events.groupBy("user", "win").agg(F.max("n").alias("n"))
    if changed_key is not None:
        hit = (F.col("user") == changed_key[0]) & (F.col("win") == changed_key[1])
        counts = counts.withColumn("n", F.when(hit, F.col("n") + 1000).otherwise(F.col("n")))
    attrs = events.dropDuplicates(["user", "win", "attr"])
    states = [ValueState("count", column="n", data=counts), ListState("events", column="event")]
    if with_attrs:
        states.append(MapState("attrs", key_column="attr", value_column="ts", data=attrs))
    writer = SavepointWriter.new(max_parallelism=128, format=fmt)
    writer.with_operator(OperatorData("proc", parallelism=parallelism, keyed=KeyedData(
        key=["user"], namespace="win", data=events, states=states,
        timers=[Timers("event", column="ts")])))
    writer.with_operator(OperatorData("src", parallelism=3, operator_states=[
        OperatorListState("offsets", column="offset",
                          data=spark.createDataFrame([(i,) for i in range(7)], "offset bigint")),
        UnionListState("members", column="member",
                       data=spark.createDataFrame([(f"m{i}",) for i in range(5)], "member string")),
        BroadcastState("rules", key_column="rule", value_column="pattern",
                       data=spark.createDataFrame([("r1", "a*"), ("r2", "b?")],
                                                  "rule string, pattern string"))]))
    return writer.write(str(path), spark).savepoint.location


@pytest.fixture(scope="module")
def saved(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("diff")
    out = {"canonical": _write(spark, base / "canonical"),
           "rocksdb": _write(spark, base / "rocksdb", fmt="rocksdb"),
           "changed": _write(spark, base / "changed", changed_key=("u7", 1)),
           "no_attrs": _write(spark, base / "no_attrs", with_attrs=False)}
    out["rescaled"] = rescale(spark, out["canonical"], str(base / "rescaled"), 1024,
                              parallelism=4).savepoint.location
    out["renamed"] = (SavepointWriter.from_existing(out["canonical"]).rename_operator("proc", "proc2")
                      .write(str(base / "renamed"), spark).savepoint.location)
    return out


def _counts(d):
    return {(t.operator, t.table): (t.only_in_a, t.only_in_b, t.changed) for t in d.tables}


ALL_TABLES = {("proc", "(keyed)"), ("proc", "(timers)"), ("src", "offsets"), ("src", "members"),
              ("src", "rules")}


@pytest.mark.slow
def test_the_same_job_in_both_formats_is_identical(spark, saved):
    d = diff_savepoints(spark, saved["canonical"], saved["rocksdb"])
    assert d.identical and d.same_content
    assert set(_counts(d)) == ALL_TABLES
    assert set(_counts(d).values()) == {(0, 0, 0)}
    assert (d.operators_added, d.operators_removed, d.operators_renamed, d.changes) == ((), (), (), ())


@pytest.mark.slow
def test_a_rescaled_copy_has_the_same_content_and_a_new_layout(spark, saved):
    d = diff_savepoints(spark, saved["canonical"], saved["rescaled"])
    assert d.same_content and not d.identical
    assert d.changes == (MetadataChange("proc", "parallelism", None, 2, 4),
                         MetadataChange("proc", "max_parallelism", None, 128, 1024))
    assert set(_counts(d).values()) == {(0, 0, 0)}


def test_one_changed_key_is_exactly_that_key(spark, saved):
    d = diff_savepoints(spark, saved["canonical"], saved["changed"], limit=3)
    assert not d.same_content and d.changes == ()
    keyed = next(t for t in d.tables if t.table == "(keyed)")
    assert (keyed.only_in_a, keyed.only_in_b, keyed.changed) == (0, 0, 1)
    [sample] = keyed.samples["changed"]
    assert sample["key"] == {"user": "u7", "namespace": 1}
    assert sample["b"]["count"] == sample["a"]["count"] + 1000
    assert sample["a"]["events"] == sample["b"]["events"]
    assert {k: v for k, v in _counts(d).items() if v != (0, 0, 0)} == {("proc", "(keyed)"): (0, 0, 1)}


def test_a_renamed_operator_is_matched_by_its_files(spark, saved):
    d = diff_savepoints(spark, saved["canonical"], saved["renamed"])
    assert d.operators_renamed == (("proc", "proc2", "same files"),)
    assert (d.operators_added, d.operators_removed) == ((), ())
    assert not d.same_content
    assert set(_counts(d).values()) == {(0, 0, 0)}  # and its content is compared


@pytest.mark.slow
def test_a_removed_state_is_a_declaration_change(spark, saved):
    d = diff_savepoints(spark, saved["canonical"], saved["no_attrs"])
    assert d.changes == (MetadataChange("proc", "state_removed", "attrs", "map map<string, int64>", None),)
    assert set(_counts(d).values()) == {(0, 0, 0)}  # the states both have are equal
    back = diff_savepoints(spark, saved["no_attrs"], saved["canonical"])
    assert back.changes == (MetadataChange("proc", "state_added", "attrs", None, "map map<string, int64>"),)


@pytest.mark.slow
def test_cli_exit_codes_and_json(saved, tmp_path):
    same = statectl("diff", saved["canonical"], saved["rocksdb"])
    assert same.returncode == 0, same.stderr
    assert same.stdout.rstrip().endswith("identical")
    changed = statectl("diff", saved["canonical"], saved["changed"], "--json")
    assert changed.returncode == 1, changed.stderr
    doc = json.loads(changed.stdout)
    assert (doc["identical"], doc["same_content"]) == (False, False)
    keyed = next(t for t in doc["tables"] if t["table"] == "(keyed)")
    assert [s["key"] for s in keyed["samples"]["changed"]] == [{"user": "u7", "namespace": 1}]
    table = statectl("diff", saved["canonical"], saved["changed"])
    assert table.returncode == 1
    assert "u7" in table.stdout and table.stdout.rstrip().endswith("different")
    rescaled = statectl("diff", saved["canonical"], saved["rescaled"], "--content-only")
    assert rescaled.returncode == 0, rescaled.stderr
    assert statectl("diff", saved["canonical"], saved["rescaled"]).returncode == 1
    missing = statectl("diff", saved["canonical"], str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and missing.stderr.startswith("error: ")
    assert "Traceback" not in missing.stderr
    usage = statectl("diff", saved["canonical"])
    assert usage.returncode == 2 and usage.stderr == "error: Missing argument 'B'. (see statectl diff --help)\n"


# --- comparison rules, on small savepoints written without Spark ------------------

def _small(path, keyed: list[dict], offsets: list[int], members: list[str], rules: dict):
    """Operator "k" (key user; states v, m, l, d) and "s" (offsets, members, rules)."""
    import pyarrow as pa

    from statectl.statefmt.build import write_keyed_files, write_operator_state_file
    from statectl.statefmt.fs import Location
    from statectl.statefmt.ids import operator_id_for_uid
    from statectl.statefmt.model import (Field, KeyedSection, KeyedStateDescriptor, Operator,
                                         OperatorState, Savepoint)
    from statectl.statefmt.formats import commit
    from statectl.statefmt.savepoint import new_savepoint_id, now_iso
    from statectl.statefmt.types import to_arrow

    out = Location.of(str(path))
    section = KeyedSection(key=(Field("user", "string"),), states=(
        KeyedStateDescriptor("v", "value", "int64"),
        KeyedStateDescriptor("m", "map", "int64", user_key_type="string"),
        KeyedStateDescriptor("l", "list", "int64"),
        KeyedStateDescriptor("d", "value", "float64")))
    schema = pa.schema([pa.field("user", pa.string())]
                       + [pa.field(s.name, to_arrow(s.column_type)) for s in section.states])
    k, s = operator_id_for_uid("k"), operator_id_for_uid("s")
    files = write_keyed_files(out, k, section, pa.Table.from_pylist(keyed, schema), 16, 2)
    section = KeyedSection(section.key, section.states, files)

    def state(name, kind, table, key_type=None):
        declared = OperatorState(name, kind, "string" if kind != "list" else "int64", key_type=key_type)
        return OperatorState(declared.name, kind, declared.value_type,
                             (write_operator_state_file(out, s, declared, table),), key_type)

    states = (
        state("offsets", "list", pa.table({"subtask": pa.array([i % 2 for i in range(len(offsets))], pa.int32()),
                                           "value": pa.array(offsets, pa.int64())})),
        state("members", "union", pa.table({"subtask": pa.array([0] * len(members), pa.int32()),
                                            "value": pa.array(members, pa.string())})),
        state("rules", "broadcast", pa.table({"key": list(rules), "value": list(rules.values())}),
              key_type="string"),
    )
    sp = Savepoint(new_savepoint_id(), now_iso(), (Operator(k, "k", 2, 16, section),
                                                   Operator(s, "s", 2, 16, None, states)))
    return commit(sp, out).location


@pytest.mark.slow
def test_maps_nulls_lists_floats_multisets_and_sets(spark, tmp_path):
    def row(user, v=None, m=None, l=None, d=None):
        return {"user": user, "v": v, "m": m, "l": l, "d": d}

    a = _small(tmp_path / "a", [
        row("u1", 1, [("a", 1), ("b", 2)], [1, 2], 0.1),
        row("u2"),                                   # every state null: as if absent
        row("u3", 3, [], [3]),                       # an empty map is no map
        row("u4", l=[1, 2]),
        row("u5", d=0.1),
        row("u7", 7),
    ], offsets=[10, 10, 20], members=["a", "b"], rules={"r1": "x", "r2": "y"})
    b = _small(tmp_path / "b", [
        row("u1", 1, [("b", 2), ("a", 1)], [1, 2], 0.1),  # map entries in another order
        row("u3", 3, None, [3]),
        row("u4", l=[2, 1]),                              # list order matters
        row("u5", d=0.10000000000000002),                 # floats compare exactly
        row("u6", 6),
    ], offsets=[20, 10, 20], members=["b", "a", "a"], rules={"r1": "x", "r2": "z", "r3": "w"})
    d = diff_savepoints(spark, a, b, limit=10)
    assert _counts(d) == {("k", "(keyed)"): (1, 1, 2), ("k", "(timers)"): (0, 0, 0),
                          ("s", "offsets"): (1, 1, 0), ("s", "members"): (0, 0, 0),
                          ("s", "rules"): (0, 1, 1)}
    keyed = next(t for t in d.tables if t.table == "(keyed)")
    assert keyed.samples["only_in_a"] == [{"key": {"user": "u7"},
                                           "a": {"v": 7}}]  # null states are left out
    assert [s["key"] for s in keyed.samples["only_in_b"]] == [{"user": "u6"}]
    assert keyed.samples["changed"] == [
        {"key": {"user": "u4"}, "a": {"l": [1, 2]}, "b": {"l": [2, 1]}},
        {"key": {"user": "u5"}, "a": {"d": 0.1}, "b": {"d": 0.10000000000000002}}]
    offsets = next(t for t in d.tables if t.table == "offsets")
    assert offsets.samples == {"only_in_a": [{"key": {"value": 10}}],
                               "only_in_b": [{"key": {"value": 20}}]}
    rules = next(t for t in d.tables if t.table == "rules")
    assert rules.samples == {"only_in_b": [{"key": {"key": "r3"}, "b": {"value": "w"}}],
                             "changed": [{"key": {"key": "r2"}, "a": {"value": "y"},
                                          "b": {"value": "z"}}]}


# --- small identical tables are confirmed in-process (readers/diff_local.py) ----------

def _row(user, v=None, m=None, l=None, d=None):
    return {"user": user, "v": v, "m": m, "l": l, "d": d}


A_KEYED = [_row("u1", 1, [("a", 1), ("b", 2)], [1, 2], 0.5), _row("u2"), _row("u3", 3, [], [3])]
A_STATE = dict(offsets=[10, 10, 20], members=["a", "b"], rules={"r1": "x"})
# A's content as the comparison rules see it: map entries in another order, the row without
# values left out, the empty map null, the list state's values on other subtasks, a union
# member twice
SAME_AS_A = ([_row("u1", 1, [("b", 2), ("a", 1)], [1, 2], 0.5), _row("u3", 3, None, [3])],
             dict(offsets=[20, 10, 10], members=["b", "a", "a"], rules={"r1": "x"}))


def _no_spark():
    raise AssertionError("Spark was asked for")


def test_small_identical_tables_are_confirmed_without_spark(spark, tmp_path):
    a = _small(tmp_path / "a", A_KEYED, **A_STATE)
    same = _small(tmp_path / "same", SAME_AS_A[0], **SAME_AS_A[1])
    d = diff_savepoints(_no_spark, a, same)
    assert d.identical and set(_counts(d).values()) == {(0, 0, 0)} and len(d.tables) == 5
    assert diff_savepoints(spark, a, same, engine="spark") == d  # Spark's join agrees


def test_what_differs_is_compared_by_spark_as_without_the_local_check(spark, tmp_path):
    a = _small(tmp_path / "a", A_KEYED, **A_STATE)
    b = _small(tmp_path / "b", [_row("u1", 1, [("a", 1)], [1, 2], 0.5), _row("u3", 3, [], [3])],
               offsets=[10, 20], members=["a", "b"], rules={"r1": "y"})
    auto = diff_savepoints(spark, a, b, limit=10)
    assert auto == diff_savepoints(spark, a, b, limit=10, engine="spark")
    assert _counts(auto) == {("k", "(keyed)"): (0, 0, 1), ("k", "(timers)"): (0, 0, 0),
                             ("s", "offsets"): (1, 0, 0), ("s", "members"): (0, 0, 0),
                             ("s", "rules"): (0, 0, 1)}


def test_a_nan_leaves_the_table_to_spark_which_holds_it_equal(spark, tmp_path):
    from statectl.readers.diff_local import Comparison, identical
    from statectl.readers.resolve import KEYED, TableChoice
    from statectl.statefmt.formats import load

    nan = [_row("u1", d=float("nan"))]
    a, b = (load(_small(tmp_path / n, nan, **A_STATE)) for n in ("a", "b"))
    how = Comparison(("user",), ("v", "m", "l", "d"), frozenset({"m", "l"}), drop_absent=True)
    assert not identical(a, TableChoice(a.operators[0], KEYED, how.values),
                         b, TableChoice(b.operators[0], KEYED, how.values), how)
    assert diff_savepoints(spark, a, b).identical


def test_diff_of_small_identical_savepoints_starts_no_jvm(tmp_path):
    """Without Java, `diff` of identical small savepoints still answers; what differs needs Spark."""
    a = _small(tmp_path / "a", A_KEYED, **A_STATE)
    same = _small(tmp_path / "same", SAME_AS_A[0], **SAME_AS_A[1])
    b = _small(tmp_path / "b", A_KEYED[:1], **A_STATE)
    no_java = {"JAVA_HOME": str(tmp_path / "no-java"),
               "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                       if not os.path.exists(os.path.join(p, "java")))}
    done = statectl_process("diff", a, same, env=no_java)
    assert (done.returncode, done.stderr) == (0, "") and done.stdout.rstrip().endswith("identical")
    assert statectl_process("diff", a, same, "--engine", "spark", env=no_java).returncode == 2
    assert statectl_process("diff", a, b, env=no_java).returncode == 2
