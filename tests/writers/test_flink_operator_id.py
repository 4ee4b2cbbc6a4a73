"""Operators named by their operator id in Flink writes, checked by the real Flink 1.20.

A Flink 1.x `_metadata` (version 4) holds no uids: the suite's job savepoint there names every
operator by its OperatorID alone. On such a savepoint: (a) `modify --remove-operator-id` of `win`
restores into the job with every other state exact and `win` empty; (b) `modify
--rename-operator-id ID=p-UID` of every operator gives each the id of a uid, and the job run
with uid prefix `p-` restores exactly the state; (c) `bootstrap --base` with a spec entry
`operator_id:` writes `proc` again from `{sql: ...}` inputs over its own table (count + 1 for
even keys) under its id, the rest shallow copies, and Flink restores the fix and the base's other
operators. The outputs keep `_metadata` version 4 and the base is never written. Unknown or
malformed ids, and ids where they cannot name anything, are one line, exit 1, nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support import flink_job
from statectl.statefmt.flink.metadata import parse_metadata
from support.cli_runner import error_line
from support.cli_runner import statectl
from support.flink_fixes import WRITTEN, _union_sorted, fix_spec, fixed_description
from support.savepoint_rows import digest
from support.flink_fixes import renamed_expected

pytestmark = pytest.mark.slow  # real Flink restores

VERSION = "1.20.3"
SHAPE = dict(backend="hashmap", format="canonical")
UIDS = ("src", "rules-src", "union-op", "bcast", "proc", "win", "snk")
PREFIX = "p-"
UNKNOWN = "0123456789abcdef0123456789abcdef"


def op_id(uid: str) -> str:
    return flink_job.operator_id(uid)["operator_id"]


PROC = op_id("proc")
FIX_SPEC = fix_spec(f"operator_id: {PROC.upper()}", PROC, 2)


def _ok(result) -> None:
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def written(flink_snapshots, tmp_path_factory):
    """The three outputs, the base's digest before and after, and what Flink restored of them."""
    snap = flink_snapshots(VERSION, [SHAPE])[0]
    work = tmp_path_factory.mktemp("flink-operator-id")
    before = digest(snap.path)
    removed, renamed, fixed = work / "removed", work / "renamed", work / "fixed"
    _ok(statectl("modify", str(snap.path), str(removed), "--remove-operator-id", op_id("win")))
    _ok(statectl("modify", str(snap.path), str(renamed),
                 *[a for uid in UIDS for a in ("--rename-operator-id", f"{op_id(uid)}={PREFIX}{uid}")]))
    (work / "fix.yaml").write_text(FIX_SPEC)
    _ok(statectl("bootstrap", str(fixed), "--base", str(snap.path), "--format", "flink",
                 "--spec", str(work / "fix.yaml")))
    after = digest(snap.path)
    items = [(flink_job.Snapshot(removed, snap.expected, work / "restore-removed"), "hashmap"),
             (flink_job.Snapshot(renamed, renamed_expected(snap.expected, PREFIX), work / "restore-renamed"),
              "rocksdb")]
    for s, _ in items:
        s.workdir.mkdir()
    dumps = flink_job.restore_snapshots(VERSION, items)
    full = flink_job.job_description(snap.expected)
    declared = flink_job.restore_declared_many(VERSION, [(snap.path, full, "hashmap"),
                                                         (fixed, fixed_description(full, "proc"), "rocksdb")])
    return {"snap": snap, "digests": (before, after), "paths": (removed, renamed, fixed),
            "removed": (snap.expected, dumps[0]), "renamed": (items[1][0].expected, dumps[1]),
            "declared": declared}


def test_the_outputs_keep_metadata_version_4_and_the_base_is_never_written(written):
    before, after = written["digests"]
    assert before == after and before
    removed, renamed, fixed = written["paths"]
    base_ids = [op.operator_id for op in parse_metadata(written["snap"].metadata.read_bytes()).operators]
    for path, ids in ((removed, [i for i in base_ids if i != op_id("win")]),
                      (renamed, [op_id(PREFIX + uid) for uid in UIDS]), (fixed, base_ids)):
        meta = parse_metadata((path / "_metadata").read_bytes())
        assert meta.version == 4
        assert sorted(op.operator_id for op in meta.operators) == sorted(ids), path.name


def test_an_operator_removed_by_its_id_restores_empty_and_the_others_exactly(written):
    expected, dump = written["removed"]
    problems = flink_job.restore_mismatches(expected, dump)
    assert [p.split(":")[0] for p in problems] == ["win windows fired", "win window timers fired"]
    assert all(p.endswith("restored []") for p in problems)
    assert len(dump["operators"]["proc"]["keyed_state"]["count"]["values"]) == int(
        expected["scenario"]["knobs"]["keys"])


def test_operators_given_uids_by_their_ids_restore_into_the_job_that_sets_those_uids(written):
    expected, dump = written["renamed"]
    assert flink_job.restore_mismatches(expected, dump) == []
    assert set(dump["operators"]) >= {PREFIX + u for u in ("src", "union-op", "bcast", "proc", "win")}


def test_an_operator_written_again_under_its_id_restores_with_the_fix(written):
    base, fixed = (d["operators"] for d in written["declared"])
    counts = base["proc"]["keyed_state"]["count"]["values"]
    assert len(counts) == 30 and sum(int(k) % 2 == 0 for k in counts) not in (0, 30)
    want = {n: s for n, s in base["proc"]["keyed_state"].items() if n in WRITTEN}
    want["count"] = {**want["count"], "values": {k: v + 1 if int(k) % 2 == 0 else v for k, v in counts.items()}}
    assert fixed["proc"]["keyed_state"] == want
    for uid in ("src", "union-op", "bcast", "win"):
        assert _union_sorted(fixed[uid]) == _union_sorted(base[uid]), uid


BAD_SPECS = {
    "unknown id": (f"operators:\n  - operator_id: {UNKNOWN}\n    keyed: {{key: key, input: {{sql: 'SELECT key, "
                   f"count FROM `{PROC}`'}}, states: [{{name: count, kind: value, column: count}}]}}\n",
                   f"error: no operator with operator id {UNKNOWN}; operators: "),
    "uid and id": (f"operators:\n  - uid: proc\n    operator_id: {PROC}\n",
                   "error: operators[0]: give the operator's uid or its operator_id, not both"),
    "not hex": ("operators:\n  - operator_id: proc\n",
                "error: operators[0].operator_id: operator id must be 32 hexadecimal digits, got 'proc'"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_bad_operator_id_in_a_spec_is_one_line(flink_snapshots, tmp_path, case):
    sp = flink_snapshots(VERSION, [SHAPE])[0].path
    text, line = BAD_SPECS[case]
    (tmp_path / "spec.yaml").write_text(text)
    out = tmp_path / "out"
    result = statectl("bootstrap", str(out), "--base", str(sp), "--format", "flink", "--spec",
                      str(tmp_path / "spec.yaml"))
    assert error_line(result, sp).startswith(line)
    assert not out.exists()


def test_an_operator_id_names_an_operator_of_a_flink_base_only(flink_snapshots, tmp_path):
    """Written in statectl's own format, an operator needs its uid."""
    sp = flink_snapshots(VERSION, [SHAPE])[0].path
    (tmp_path / "spec.yaml").write_text(FIX_SPEC)
    out = tmp_path / "out"
    result = statectl("bootstrap", str(out), "--base", str(sp), "--spec", str(tmp_path / "spec.yaml"))
    assert error_line(result, sp) == (
        f"error: operator id {PROC}: an operator named by its operator id alone is one of a Flink base's, "
        "written with --format flink; give it a uid")
    assert not out.exists()


BAD_COMMANDS = {
    "remove unknown": (["modify", "--remove-operator-id", UNKNOWN], f"error: no operator with operator id {UNKNOWN}; "),
    "rename unknown": (["modify", "--rename-operator-id", f"{UNKNOWN}=x"], f"error: no operator with operator id {UNKNOWN}; "),
    "rename without a uid": (["modify", "--rename-operator-id", PROC],
                             f"error: --rename-operator-id takes ID=NEW, got '{PROC}'"),
    "remove not hex": (["modify", "--remove-operator-id", "win"],
                       "error: operator id must be 32 hexadecimal digits, got 'win'"),
    "rescale unknown": (["rescale", "--max-parallelism", "256", "--operator-id", UNKNOWN],
                        f"error: no operator with operator id {UNKNOWN}; "),
    "rescale no keyed state": (["rescale", "--max-parallelism", "256", "--operator-id", op_id("src")],
                               f"error: operator {op_id('src')} has no keyed state to rescale; keyed operators: "
                               f"{PROC}, {op_id('win')}"),
}


@pytest.mark.parametrize("case", sorted(BAD_COMMANDS))
def test_a_bad_operator_id_on_the_command_line_is_one_line(flink_snapshots, tmp_path, case):
    sp = flink_snapshots(VERSION, [SHAPE])[0].path
    (command, *options), line = BAD_COMMANDS[case]
    out = tmp_path / "out"
    assert error_line(statectl(command, str(sp), str(out), *options), sp).startswith(line)
    assert not out.exists()
