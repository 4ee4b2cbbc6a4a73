"""Canonical data files: exact write -> read round trips and key-group range reads."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.builders import build_full_savepoint, keyed_rows, keyed_section, timer_rows
from statectl.statefmt.build import write_keyed_files, write_operator_state_file
from statectl.statefmt.canonical import (
    keyed_schema,
    operator_state_schema,
    read_file,
    read_key_group_range,
    timers_schema,
)
from statectl.statefmt.errors import UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import key_group_for_key, key_group_range
from statectl.statefmt.model import KEY_GROUP_COLUMN, OperatorState
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location


def _read_all(sp, files, schema):
    tables = [read_file(file_location(sp, f.ref), f, schema) for f in files]
    return pa.concat_tables(tables)


def _canon(table: pa.Table, keys=("user", "shard", "namespace")) -> list[dict]:
    rows = table.to_pylist()
    for r in rows:
        r.pop(KEY_GROUP_COLUMN, None)
    return sorted(rows, key=lambda r: repr([r[k] for k in keys]))


def test_keyed_round_trip_is_exact_for_every_kind_and_type(tmp_path):
    sp = load(build_full_savepoint(tmp_path / "sp").location)
    proc = sp.operator("proc")
    got = _read_all(sp, proc.keyed.files, keyed_schema(proc.keyed))
    assert _canon(got) == _canon(keyed_rows())
    # column types are the declared ones
    for state in proc.keyed.states:
        assert got.schema.field(state.name).type == keyed_schema(proc.keyed).field(state.name).type


def test_timers_round_trip(tmp_path):
    sp = load(build_full_savepoint(tmp_path / "sp").location)
    keyed = sp.operator("proc").keyed
    got = _read_all(sp, keyed.timers, timers_schema(keyed))
    assert _canon(got, ("user", "timestamp")) == _canon(timer_rows(), ("user", "timestamp"))


def test_operator_state_round_trips_keep_order_per_subtask(tmp_path):
    sp = load(build_full_savepoint(tmp_path / "sp").location)
    src = sp.operator("src")
    by_name = {s.name: s for s in src.operator_states}
    offsets = _read_all(sp, by_name["offsets"].files, operator_state_schema(by_name["offsets"]))
    assert offsets.to_pylist() == [{"subtask": 0, "value": 10}, {"subtask": 0, "value": 11},
                                   {"subtask": 1, "value": 20}]
    rules = _read_all(sp, by_name["rules"].files, operator_state_schema(by_name["rules"]))
    assert rules.to_pylist() == [{"key": "r1", "value": {"pattern": "a*", "weight": 1}},
                                 {"key": "r2", "value": {"pattern": "b?", "weight": None}}]


@pytest.mark.parametrize("parallelism", [1, 3, 16])
def test_files_are_split_per_subtask_range_and_rows_sit_in_their_key_group(tmp_path, parallelism):
    sp = load(build_full_savepoint(tmp_path / "sp", parallelism=parallelism).location)
    keyed = sp.operator("proc").keyed
    ranges = {key_group_range(16, parallelism, s) for s in range(parallelism)}
    for f in keyed.files:
        assert f.key_groups in ranges
        table = read_file(file_location(sp, f.ref), f, keyed_schema(keyed))
        groups = table.column(KEY_GROUP_COLUMN).to_pylist()
        assert groups == sorted(groups)
        for row in table.to_pylist():
            assert row[KEY_GROUP_COLUMN] == key_group_for_key([row["user"], row["shard"]],
                                                              ["string", "int32"], 16)
            assert f.key_groups[0] <= row[KEY_GROUP_COLUMN] <= f.key_groups[1]


def test_a_key_group_range_reads_alone_using_row_group_statistics(tmp_path):
    out = Location.of(str(tmp_path / "sp"))
    section = keyed_section()
    table = keyed_rows(400)
    (f,) = write_keyed_files(out, "0" * 32, section, table, 16, 1)
    loc = out.child(f.ref.path)
    schema = keyed_schema(section)
    whole = read_file(loc, f, schema)
    for first, last in [(0, 0), (3, 9), (15, 15), (0, 15)]:
        part = read_key_group_range(loc, f, schema, first, last)
        groups = whole.column(KEY_GROUP_COLUMN)
        expected = whole.filter(pc.and_(pc.greater_equal(groups, first), pc.less_equal(groups, last)))
        assert part.to_pylist() == expected.to_pylist()


def test_null_keys_and_missing_columns_are_refused(tmp_path):
    out = Location.of(str(tmp_path / "sp"))
    section = keyed_section()
    rows = keyed_rows(3)
    with pytest.raises(UsageError, match="key column 'user' holds nulls"):
        write_keyed_files(out, "0" * 32, section,
                          rows.set_column(0, "user", pa.array([None, "a", "b"], pa.string())), 16, 1)
    with pytest.raises(UsageError, match=r"missing column\(s\) count"):
        write_keyed_files(out, "0" * 32, section, rows.drop_columns(["count"]), 16, 1)
    with pytest.raises(UsageError, match="do not fit"):
        write_keyed_files(out, "0" * 32, section,
                          rows.set_column(rows.schema.get_field_index("count"), "count",
                                          pa.array(["x", "y", "z"])), 16, 1)


def test_broadcast_keys_must_be_unique(tmp_path):
    state = OperatorState("rules", "broadcast", "string", key_type="string")
    with pytest.raises(UsageError, match="a key appears twice"):
        write_operator_state_file(Location.of(str(tmp_path)), "0" * 32, state,
                                  pa.table({"key": ["a", "a"], "value": ["x", "y"]}))
