"""`bootstrap --base SP --format flink` fixing a SQL operator of the suite's Flink 2.3 SQL job
(hashmap, canonical; and RocksDB with `table.exec.state.ttl`): `group_agg`'s `GroupAggregate[4]`,
named by its operator id, is written again from `{sql: ...}` inputs over its own table with
`SUM(v)` (accState's f1) less 1000 for the even keys (docs/FLINK.md, "Fixing a SQL job's state"),
TTL states' last-access timestamps passed through from their `_ttl_ts` columns. It reads back with
exactly that fix and the base's TTL timestamps, every other operator as it was; the real SQL job
restores it and, fed a second batch (mode=sql-restore), emits group_agg's restored totals less 1000
for the even keys and every other statement's changes unchanged.
Refused changes are one line and write nothing: a value its field's type cannot hold, a RAW
field given new contents, a `flink:` binding, a state the operator does not have."""

from __future__ import annotations

import pytest

from support import flink_job
from support.flink_sql_content import (net_changes, operator_content, raw_entries, restored_changes, savepoint_content,
                               ttl_timestamps)
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint
from support.cli_runner import error_line
from support.cli_runner import statectl
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # the real SQL job restores; statectl runs Spark

VERSION = "2.3.0"
SHAPES = ("hashmap-canonical", "rocksdb-canonical-ttl")  # SQL_SHAPES entries
FIXED = "GroupAggregate[4]"
SHIFT = 1000
ACC_FIELDS = {"f0": "accState.f0", "f1": f"accState.f1 - IF(f0 % 2 = 0, {SHIFT}, 0)", "f2": "accState.f2",
              "f3": "accState.f3", "f4": "accState.f4", "_rowkind": "accState._rowkind"}


def fix_spec(op_id: str, fields: dict[str, str] = ACC_FIELDS, extra: str = "", state: str = "accState",
             ttl: bool = False) -> str:
    """GroupAggregate[4] (named by its id) written again: accState's fields from *fields* (SQL
    over its table, which `statectl sql` names by its planner name); with *ttl*, every state's
    last-access timestamps as they are (`<column>_ttl_ts`, a map's per entry)."""
    acc = ", ".join(f"{sql} AS {name}" for name, sql in fields.items())
    kept = ", accState_ttl_ts AS {0}_ttl_ts, distinctAcc_0_null_state_ttl_ts".format(state) if ttl else ""
    entry_ttl = ", distinctAcc_0_ttl_ts[name] AS bits_ttl_ts" if ttl else ""
    return f"""
operators:
  - operator_id: {op_id}
    parallelism: 2{extra}
    keyed:
      key: f0
      input: {{sql: "SELECT f0, struct({acc}) AS {state}, distinctAcc_0_null_state{kept} FROM `{FIXED}`"}}
      states:
        - {{name: {state}, kind: value, column: {state}}}
        - {{name: distinctAcc_0_null_state, kind: value, column: distinctAcc_0_null_state}}
        - name: distinctAcc_0
          kind: map
          key_column: name
          value_column: bits
          input: {{sql: "SELECT f0, name, bits{entry_ttl} FROM `{FIXED}`
                        LATERAL VIEW explode(distinctAcc_0) t AS name, bits"}}
"""


def _base(shape: str):
    try:
        return flink_job.make_sql_snapshots(VERSION, [flink_job.SQL_SHAPES[shape]])[0]
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module", params=SHAPES)
def fixed(request, tmp_path_factory):
    shape = request.param
    snap = _base(shape)
    work = tmp_path_factory.mktemp(f"sql-fix-{shape}")
    op_id = snap.expected["operators"][FIXED]["operator_id"]
    (work / "fix.yaml").write_text(fix_spec(op_id, ttl="state_ttl" in flink_job.SQL_SHAPES[shape]))
    before = digest(snap.path)
    result = statectl("bootstrap", str(work / "fixed"), "--base", str(snap.path), "--format", "flink",
                      "--spec", str(work / "fix.yaml"))
    assert result.returncode == 0, result.stderr
    assert digest(snap.path) == before
    return snap, work / "fixed", op_id, shape


def _accumulators(path, op_id: str) -> dict:
    table = keyed_table(open_flink_savepoint(str(path)).operator(op_id))
    return {r["f0"]: r["accState"] for r in table.to_pylist()}


def test_the_fix_reads_back_and_nothing_else_changed(fixed):
    snap, out, op_id, _ = fixed
    base, after = _accumulators(snap.path, op_id), _accumulators(out, op_id)
    assert len(base) == int(snap.expected["scenario"]["knobs"]["keys"])
    assert after == {k: {**acc, "f1": acc["f1"] - (SHIFT if k % 2 == 0 else 0)} for k, acc in base.items()}
    fixed_maps = {r["f0"]: sorted(r["distinctAcc_0"]) for r in keyed_table(
        open_flink_savepoint(str(out)).operator(op_id)).to_pylist()}
    assert fixed_maps == {r["f0"]: sorted(r["distinctAcc_0"]) for r in keyed_table(
        open_flink_savepoint(str(snap.path)).operator(op_id)).to_pylist()}
    others = {i: c for i, c in savepoint_content(snap.path).items() if i != op_id}
    assert {i: operator_content(out, i) for i in others} == others


def test_the_fix_keeps_every_ttl_timestamp(fixed):
    snap, out, op_id, shape = fixed
    base = ttl_timestamps(snap.path)
    if "state_ttl" not in flink_job.SQL_SHAPES[shape]:
        assert base == {}
        return
    assert set(base[op_id]) == {"accState", "distinctAcc_0", "distinctAcc_0_null_state"}
    assert len(base[op_id]["accState"]) == len(base[op_id]["distinctAcc_0"]) > 0
    assert ttl_timestamps(out) == base


def test_what_the_fix_did_not_change_keeps_flinks_bytes(fixed):
    """In GroupAggregate[4]'s entries: distinctAcc_0's are the bytes Flink wrote, accState's keys
    too, and so are the values of the odd keys (the fix lowers the even keys' SUM); with TTL, every
    accState value starts with its base's 8 bytes, the last-access time."""
    snap, out, op_id, shape = fixed
    base, after = raw_entries(snap.path)[op_id], raw_entries(out)[op_id]
    assert after["distinctAcc_0"] == base["distinctAcc_0"]
    base_acc, after_acc = dict(base["accState"]), dict(after["accState"])
    assert set(after_acc) == set(base_acc)
    kept = {k for k, v in after_acc.items() if v == base_acc[k]}
    assert len(kept) == len(base_acc) // 2  # the odd keys of 30
    if "state_ttl" in flink_job.SQL_SHAPES[shape]:
        assert {k: v[:8] for k, v in after_acc.items()} == {k: v[:8] for k, v in base_acc.items()}


def _shifted(row: list) -> list:
    """A group_agg change after the fix: an even key's restored total is SHIFT less (a key new
    to the second batch, +I, had no state to fix)."""
    kind, k, cnt, total, *rest = row
    return [kind, k, cnt, total - SHIFT if k % 2 == 0 and kind != "+I" else total, *rest]


def test_the_sql_job_restores_the_fix(fixed):
    snap, out, _, shape = fixed
    base_dump, fix_dump = flink_job.restore_sqls(VERSION, [(snap, flink_job.sql_shape_knobs(shape)),
                                                          (out, flink_job.sql_shape_knobs(shape))])
    base, fix = restored_changes(base_dump), restored_changes(fix_dump)
    assert base["group_agg"] == flink_job.sorted_rows(base_dump["model_after_restore"]["group_agg"])
    assert "-U" in {row[0] for row in base["group_agg"]}  # restored totals were retracted
    assert fix["group_agg"] == flink_job.sorted_rows([_shifted(row) for row in base["group_agg"]])
    others = ("group_agg", "retract_agg")  # retract_agg's updates differ from run to run (net_changes)
    assert {s: rows for s, rows in fix.items() if s not in others} == \
        {s: rows for s, rows in base.items() if s not in others}
    assert net_changes(fix)["retract_agg"] == net_changes(base)["retract_agg"]


REFUSED = {
    "narrowing": (dict(fields={**ACC_FIELDS, "f1": "accState.f1 + 0.5"}),
                  "state 'accState', value.f1: decimal128(22, 1) values do not fit BIGINT "
                  "(Rescaling Decimal value would cause data loss)"),
    "raw contents": (dict(fields={**ACC_FIELDS, "f4": "'none'"}),
                     "a RAW('org.apache.flink.table.api.dataview.MapView'"),
    "a binding": (dict(extra="\n    flink: {states: {accState: Long}}"),
                  "a SQL operator's serializers are its base's (copied); leave out its flink: binding"),
    "unknown state": (dict(state="acc"), "state 'acc' is not in the base's SQL operator, whose states are "
                                         "'accState', 'distinctAcc_0_null_state', 'distinctAcc_0'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_fix_is_one_line_and_writes_nothing(tmp_path, case):
    snap = _base(SHAPES[0])
    op_id = snap.expected["operators"][FIXED]["operator_id"]
    kwargs, expected = REFUSED[case]
    (tmp_path / "fix.yaml").write_text(fix_spec(op_id, **kwargs))
    result = statectl("bootstrap", str(tmp_path / "out"), "--base", str(snap.path), "--format", "flink",
                      "--spec", str(tmp_path / "fix.yaml"))
    assert expected in error_line(result, snap.path)
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())  # a failed task's files are removed
