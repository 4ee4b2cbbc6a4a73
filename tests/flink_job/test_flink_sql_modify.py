"""`modify --remove-operator-id` of one operator of the suite's Flink 2.3 SQL job (mode=sql), whose
operators have no uid: `Deduplicate[17]` (statement dedup_first, keep each key's first row) is
named by its operator id (a hash of the plan) and removed. Every other operator's state (keyed
states, timers, operator states) reads back identical, and the real SQL job restores both the base
and the modified savepoint and is fed a second batch (mode=sql-restore): from the base every
statement continues its state (dedup_first emits only keys the first batch lacked), from the
modified one dedup_first has forgotten every key and emits each key's first row again, while every
other statement ends with the same table as from the base."""

from __future__ import annotations

import json

import pytest

from support import flink_job
from support.flink_sql_content import operator_content
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from support.cli_runner import statectl
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # the real SQL job restores

VERSION = "2.3.0"
SHAPE = dict(backend="hashmap", format="canonical")
REMOVED = "Deduplicate[17]"


def _changelog(rows: list) -> list:
    return sorted(rows, key=json.dumps)


@pytest.fixture(scope="module")
def modified(tmp_path_factory):
    try:
        snap = flink_job.make_sql_snapshots(VERSION, [SHAPE])[0]
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    out = tmp_path_factory.mktemp("sql-modify") / "out"
    before = digest(snap.path)
    removed_id = snap.expected["operators"][REMOVED]["operator_id"]
    result = statectl("modify", str(snap.path), str(out), "--remove-operator-id", removed_id)
    assert result.returncode == 0, result.stderr
    assert digest(snap.path) == before
    return snap, out, removed_id


def test_the_other_operators_state_reads_back_identical(modified):
    snap, out, removed_id = modified
    ids = {o["operator_id"] for o in snap.expected["operators"].values()} - {removed_id}
    assert len(ids) == 10
    for operator_id in sorted(ids):
        state = operator_content(snap.path, operator_id, as_stored=True)
        assert state["keyed"], operator_id
        assert operator_content(out, operator_id, as_stored=True) == state, operator_id
    kept = {op.operator_id for op in open_flink_savepoint(str(out)).metadata.operators}
    every = {op.operator_id for op in open_flink_savepoint(str(snap.path)).metadata.operators}
    assert kept == every - {removed_id}


def test_the_sql_job_restores_it_and_only_the_removed_operator_forgets(modified):
    snap, out, _ = modified
    base, fixed = flink_job.restore_sqls(VERSION, [(snap, dict(backend=SHAPE["backend"])),
                                                   (out, dict(backend=SHAPE["backend"]))])
    changes = {d: {s: st["received_changelog"] for s, st in dump["statements"].items()}
               for d, dump in (("base", base), ("fixed", fixed))}
    # restored: only the keys the first batch lacks are new to dedup_first; forgotten: every key is
    assert _changelog(changes["base"]["dedup_first"]) == _changelog(base["model_after_restore"]["dedup_first"])
    assert _changelog(changes["fixed"]["dedup_first"]) == _changelog(_first_rows(fixed["second_batch"]["src"]))
    assert len(changes["fixed"]["dedup_first"]) > len(changes["base"]["dedup_first"])
    # every other statement ends with the same table (rows of different keys may arrive in another order)
    saved = {s: st["received_output"] for s, st in snap.expected["statements"].items()}
    assert {s: flink_job.materialize(saved[s], rows) for s, rows in changes["fixed"].items() if s != "dedup_first"} == \
        {s: flink_job.materialize(saved[s], rows) for s, rows in changes["base"].items() if s != "dedup_first"}
    # the kept aggregates continue from their restored totals
    assert _changelog(changes["base"]["group_agg"]) == _changelog(base["model_after_restore"]["group_agg"])


def _first_rows(events: list) -> list:
    """dedup_first's +I rows for events (input.src's layout) of keys it never saw: each key's first."""
    first = {}
    for _seq, k, name, v, price, ratio, flag, seen_at, _rt in events:
        first.setdefault(k, ["+I", k, name, v, price, ratio, flag, seen_at])
    return list(first.values())

