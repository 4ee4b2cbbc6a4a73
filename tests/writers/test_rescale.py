"""Rescale: every key moves to the group and subtask the format's math assigns, nothing else changes."""

from __future__ import annotations

import json

import pytest

from support.cli_runner import statectl, statectl_process
from statectl.readers import open_savepoint
from statectl.statefmt.canonical import read_file
from statectl.statefmt.errors import LimitError, UnknownOperatorError, UnknownStateError, UsageError
from statectl.statefmt.keygroups import key_group_for_key, key_group_range, subtask_for_key_group
from statectl.statefmt.model import KEY_GROUP_COLUMN
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.validate import validate
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

KEYS = 300


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """Keyed value/list/map state with namespaces and timers, plus list, union and broadcast state."""
    events = spark.createDataFrame(
        [(f"u{i % KEYS}", i % 3, i, f"e{i}", f"k{i % 5}", i * 1000) for i in range(KEYS * 3)],
        "user string, win int, n bigint, event string, attr string, ts bigint")
    counts = events.groupBy("user", "win").agg({"n": "max"}).withColumnRenamed("max(n)", "n")
    attrs = events.dropDuplicates(["user", "win", "attr"])
    offsets = spark.createDataFrame([(i,) for i in range(7)], "offset bigint")
    members = spark.createDataFrame([(f"m{i}",) for i in range(5)], "member string")
    rules = spark.createDataFrame([("r1", "a*"), ("r2", "b?")], "rule string, pattern string")
    writer = SavepointWriter.new(max_parallelism=128)
    writer.with_operator(OperatorData("proc", parallelism=2, keyed=KeyedData(
        key=["user"], namespace="win", data=events,
        states=[ValueState("count", column="n", data=counts), ListState("events", column="event"),
                MapState("attrs", key_column="attr", value_column="ts", data=attrs)],
        timers=[Timers("event", column="ts")])))
    writer.with_operator(OperatorData("src", parallelism=3, operator_states=[
        OperatorListState("offsets", column="offset", data=offsets),
        UnionListState("members", column="member", data=members),
        BroadcastState("rules", key_column="rule", value_column="pattern", data=rules)]))
    path = tmp_path_factory.mktemp("rescale") / "base"
    return writer.write(str(path), spark).savepoint


def _keyed_rows(spark, location, timers=False):
    reader = open_savepoint(spark, location)
    df = reader.timers("proc") if timers else reader.keyed("proc")
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in df.collect())


def _check_placement(sp, max_p, p):
    """Every row sits in its key's group, every file inside one subtask's range."""
    op = sp.operator("proc")
    assert (op.max_parallelism, op.parallelism) == (max_p, p)
    ranges = [key_group_range(max_p, p, s) for s in range(p)]
    rows = 0
    for files, schema_of in ((op.keyed.files, "keyed"), (op.keyed.timers, "timers")):
        from statectl.statefmt.canonical import keyed_schema, timers_schema

        schema = keyed_schema(op.keyed) if schema_of == "keyed" else timers_schema(op.keyed)
        for f in files:
            first, last = f.key_groups
            owner = subtask_for_key_group(first, max_p, p)
            assert ranges[owner][0] <= first and last <= ranges[owner][1]
            table = read_file(file_location(sp, f.ref), f, schema)
            for user, group in zip(table.column("user").to_pylist(),
                                   table.column(KEY_GROUP_COLUMN).to_pylist()):
                assert group == key_group_for_key([user], ["string"], max_p)
                assert first <= group <= last
                rows += 1
    return rows


def _check_native_placement(sp, max_p, p):
    """One database per subtask, on its key-group range; every row in its key's group."""
    from statectl.readers.local import local_table
    from statectl.readers.resolve import KEYED, TIMERS, TableChoice

    op = sp.operator("proc")
    assert (op.max_parallelism, op.parallelism) == (max_p, p)
    assert {f.key_groups for f in op.keyed.files} == {key_group_range(max_p, p, s) for s in range(p)}
    rows = 0
    for table in (KEYED, TIMERS):
        read = local_table(sp, TableChoice(op, table), include_key_group=True)
        for user, group in zip(read.column("user").to_pylist(), read.column(KEY_GROUP_COLUMN).to_pylist()):
            assert group == key_group_for_key([user], ["string"], max_p)
            rows += 1
    return rows


def _key_groups(sp):
    op = sp.operator("proc")
    from statectl.statefmt.canonical import keyed_schema

    out = set()
    for f in op.keyed.files:
        table = read_file(file_location(sp, f.ref), f, keyed_schema(op.keyed))
        out |= set(zip(table.column("user").to_pylist(), table.column("namespace").to_pylist(),
                       table.column(KEY_GROUP_COLUMN).to_pylist()))
    return out


def test_new_max_parallelism_moves_every_key_and_keeps_every_value(spark, base, tmp_path):
    report = rescale(spark, base.location, str(tmp_path / "r"), 4096, parallelism=3)
    sp = load(report.savepoint.location)
    rows_before = sum(f.rows for f in base.operator("proc").data_files())
    assert _check_placement(sp, 4096, 3) == rows_before
    assert _keyed_rows(spark, sp.location) == _keyed_rows(spark, base.location)
    assert _keyed_rows(spark, sp.location, timers=True) == _keyed_rows(spark, base.location,
                                                                       timers=True)
    assert validate(sp.location).valid
    # the operator without keyed state is a shallow copy, untouched
    src = sp.operator("src")
    assert src.parallelism == 3
    assert all(f.ref.savepoint == base.savepoint_id for f in src.data_files())


def test_round_trip_128_4096_128_gives_back_the_original_assignment(spark, base, tmp_path):
    up = rescale(spark, base.location, str(tmp_path / "up"), 4096)
    down = rescale(spark, up.savepoint.location, str(tmp_path / "down"), 128)
    sp = load(down.savepoint.location)
    assert _key_groups(sp) == _key_groups(base)
    assert _check_placement(sp, 128, 2) == sum(f.rows for f in base.operator("proc").data_files())
    assert _keyed_rows(spark, sp.location) == _keyed_rows(spark, base.location)


def test_parallelism_only_change_writes_no_keyed_file(spark, base, tmp_path):
    out = tmp_path / "p5"
    report = rescale(spark, base.location, str(out), 128, parallelism=5, operators=["proc"])
    sp = load(report.savepoint.location)
    proc = sp.operator("proc")
    assert proc.parallelism == 5
    assert [f.ref.path for f in proc.keyed.files] == [f.ref.path for f in base.operator("proc").keyed.files]
    assert all(f.ref.savepoint == base.savepoint_id for f in proc.data_files())
    written = [p for p in out.rglob("*") if p.is_file() and p.name != "_metadata"]
    assert written == []
    assert _keyed_rows(spark, sp.location) == _keyed_rows(spark, base.location)


def test_parallelism_change_redistributes_list_and_union_state(spark, base, tmp_path):
    events = spark.createDataFrame([(f"u{i}", i) for i in range(10)], "user string, n bigint")
    offsets = spark.createDataFrame([(i,) for i in range(7)], "offset bigint")
    members = spark.createDataFrame([(f"m{i}",) for i in range(5)], "member string")
    both = SavepointWriter.new(max_parallelism=16).with_operator(OperatorData(
        "both", parallelism=3, keyed=KeyedData(key=["user"], data=events,
                                               states=[ValueState("n", column="n")]),
        operator_states=[OperatorListState("offsets", column="offset", data=offsets),
                         UnionListState("members", column="member", data=members)]))
    sp0 = both.write(str(tmp_path / "both"), spark).savepoint
    reader0 = open_savepoint(spark, sp0.location)
    members_before = sorted(r.value for r in reader0.union_state("both", "members").collect())
    # the list in restore order: subtask by subtask, each subtask's entries in order
    import pyarrow as pa
    from statectl.statefmt.canonical import operator_state_schema

    state0 = sp0.operator("both").operator_state("offsets")
    entries = pa.concat_tables([read_file(file_location(sp0, f.ref), f, operator_state_schema(state0))
                                for f in state0.files]).sort_by([("subtask", "ascending")])
    offsets_before = entries.column("value").to_pylist()

    sp = rescale(spark, sp0.location, str(tmp_path / "both2"), 16, parallelism=2).savepoint
    state = sp.operator("both").operator_state("offsets")
    table = read_file(file_location(sp, state.files[0].ref), state.files[0],
                      operator_state_schema(state))
    assert table.column("subtask").to_pylist() == [0, 0, 0, 0, 1, 1, 1]  # 7 entries, even split
    assert table.column("value").to_pylist() == offsets_before
    reader = open_savepoint(spark, sp.location)
    assert sorted(r.value for r in reader.union_state("both", "members").collect()) == members_before
    assert sorted(r.value for r in reader.list_state("both", "offsets").collect()) == list(range(7))


def test_limits_and_unknown_operators_are_clear_errors(spark, base, tmp_path):
    out = str(tmp_path / "x")
    with pytest.raises(LimitError, match="max parallelism must be between 1 and 32768, got 40000"):
        rescale(spark, base.location, out, 40000)
    with pytest.raises(LimitError, match="parallelism must be between 1 and the max parallelism 4, got 5"):
        rescale(spark, base.location, out, 4, parallelism=5)
    with pytest.raises(UsageError, match="runs at parallelism 2, more than the new max parallelism 1"):
        rescale(spark, base.location, out, 1)
    with pytest.raises(UnknownOperatorError, match="no operator with uid 'nope'; operators: proc, src"):
        rescale(spark, base.location, out, 256, operators=["nope"])
    with pytest.raises(UnknownStateError, match="operator src has no keyed state to rescale; keyed operators: proc"):
        rescale(spark, base.location, out, 256, operators=["src"])
    assert not (tmp_path / "x" / "_metadata").exists()


@pytest.mark.slow
def test_cli_rescale_and_its_errors(base, tmp_path):
    out = str(tmp_path / "cli")
    # run from a folder holding a package named like statectl's: Spark's Python
    # workers must still import the installed one (a process: its workers start there)
    (tmp_path / "writers").mkdir()
    (tmp_path / "writers" / "__init__.py").write_text("raise ImportError('shadowed')\n")
    result = statectl_process("rescale", base.location, out, "--max-parallelism", "256", "--parallelism", "4",
                              cwd=tmp_path, env={"STATECTL_ENGINE": "classic"})  # workers of its own Spark
    assert result.returncode == 0, result.stderr
    assert "proc" in result.stdout and "rescaled" in result.stdout
    info = json.loads(statectl("info", out, "--json").stdout)
    proc = next(o for o in info["operators"] if o["uid"] == "proc")
    assert (proc["parallelism"], proc["max_parallelism"]) == (4, 256)
    bad = statectl("rescale", base.location, str(tmp_path / "bad"), "--max-parallelism", "0")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "max parallelism must be between 1 and 32768, got 0" in bad.stderr
    unknown = statectl("rescale", base.location, str(tmp_path / "bad"), "--max-parallelism", "256",
                       "--uid", "src")
    assert unknown.returncode == 1 and "has no keyed state to rescale" in unknown.stderr


def test_native_operator_is_rescaled_into_native_databases(spark, tmp_path):
    events = spark.createDataFrame([(f"u{i % 40}", i, f"e{i}") for i in range(120)],
                                   "user string, ts bigint, event string")
    counts = events.groupBy("user").agg({"ts": "max"}).withColumnRenamed("max(ts)", "n")
    native = SavepointWriter.new(max_parallelism=32, format="rocksdb").with_operator(OperatorData(
        "proc", parallelism=2, keyed=KeyedData(key=["user"], data=events, states=[
            ValueState("n", column="n", data=counts), ListState("events", column="event", order_by="ts")],
            timers=[Timers("event", column="ts")])))
    sp0 = native.write(str(tmp_path / "native"), spark).savepoint
    assert sp0.operator("proc").format == "rocksdb"
    sp = rescale(spark, sp0.location, str(tmp_path / "rescaled"), 64, parallelism=3).savepoint
    assert sp.operator("proc").format == "rocksdb"
    assert _check_native_placement(load(sp.location), 64, 3) == 40 + 120  # keys + timers
    assert validate(sp.location, deep=True).valid
    assert _keyed_rows(spark, sp.location) == _keyed_rows(spark, sp0.location)
    assert _keyed_rows(spark, sp.location, timers=True) == _keyed_rows(spark, sp0.location, timers=True)
