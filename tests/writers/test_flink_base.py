"""`statectl bootstrap --base FLINK_SAVEPOINT --format flink`, checked by a real Flink 2.3.

(a) The dev fixture long-hashmap-canonical with lk-proc written again from `{sql: ...}` inputs over
its own table (count + 1 for even keys, its other value, list and map states as they were) and every
other operator a shallow pointer copy: Flink restores, into both backends, exactly the fixed state
for lk-proc and the base's state for the rest. (b) A state stored as Integer written as Long
restores into a job declaring Long with the same values. (c) A `--self-contained` output restores
after its base folder is deleted. (d) The base is byte-identical after every command, failed
ones too. All restores run in one JVM. The one-line refusals run in-process, one as a `statectl` process.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

import pytest

from support.cli_runner import statectl, statectl_process
from support.savepoint_rows import digest

sys.path.insert(0, str(Path(__file__).parents[1]))
from support import flink_job  # noqa: E402
from support.flink_fixes import _union_sorted, fix_spec, fixed_description, PROC, WRITTEN

# Every test here needs the module's writes and the restores of them by a real Flink (cached),
# or statectl processes: the inner loop has the same writes' logic in tests/writers/test_sql_inputs.py.
pytestmark = pytest.mark.slow

VERSION = "2.3.0"
FIXTURE = "long-hashmap-canonical"


FIX_SPEC = fix_spec(f"uid: {PROC}", PROC, 3)

# (b): a Flink savepoint whose state `n` is an Integer, and its SQL rewrite as a Long
INT_SPEC = """
format: flink
operators:
  - uid: cnt
    parallelism: 2
    max_parallelism: 128
    flink: {key: String, states: {n: Integer}}
    keyed: {key: id, input: {path: counts.csv, schema: "id string, n int"},
            states: [{name: n, kind: value, column: n}]}
  - uid: src
    parallelism: 2
    max_parallelism: 128
    operator_state: [{name: offsets, kind: list, column: offset, input: {path: offsets.csv, schema: "offset bigint"}}]
"""
LONG_SPEC = """
operators:
  - uid: cnt
    parallelism: 2
    flink: {states: {n: Long}}
    keyed: {key: key, input: {sql: "SELECT key, n FROM cnt"}, states: [{name: n, kind: value, column: n}]}
"""
COUNTS = {f"user-{i:02d}": i * 1000 - 7 for i in range(1, 21)}


def _description(n_type: str) -> dict:
    return {"operators": [
        {"uid": "cnt", "parallelism": 2, "max_parallelism": 128, "key_type": "String",
         "keyed_state": [{"name": "n", "kind": "VALUE", "type": n_type}]},
        {"uid": "src", "parallelism": 2, "max_parallelism": 128,
         "operator_state": [{"name": "offsets", "distribution": "SPLIT_DISTRIBUTE", "element_type": "Long"}]}]}


def _bootstrap(*args: str):
    result = statectl("bootstrap", *args)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every output, the bases' digests before and after, and one Flink run restoring them all."""
    work = tmp_path_factory.mktemp("flink-base")
    base, own_base = work / "base", work / "own-base"  # own-base: the self-contained output's, deleted
    for target in (base, own_base):
        shutil.copytree(flink_job.FIXTURES / FIXTURE / "savepoint", target)
    before = digest(base)
    spec = _spec(work, "fix.yaml", FIX_SPEC)
    fixed, standalone = work / "fixed", work / "standalone"
    _bootstrap(str(fixed), "--base", str(base), "--format", "flink", "--spec", str(spec))
    _bootstrap(str(standalone), "--base", str(own_base), "--format", "flink", "--spec", str(spec),
               "--self-contained")
    narrow = FIX_SPEC.replace("    keyed:", "    flink: {states: {count: Integer}}\n    keyed:", 1)
    refused = statectl("bootstrap", str(work / "refused"), "--base", str(base), "--format", "flink",
                       "--spec", str(_spec(work, "narrow.yaml", narrow)))
    after = digest(base)
    shutil.rmtree(own_base)  # the self-contained output must not need it

    (work / "counts.csv").write_text("id,n\n" + "".join(f"{k},{v}\n" for k, v in COUNTS.items()))
    (work / "offsets.csv").write_text("offset\n" + "".join(f"{i * 11}\n" for i in range(6)))
    ints = work / "ints"
    _bootstrap(str(ints), "--spec", str(_spec(work, "ints.yaml", INT_SPEC)))
    ints_before = digest(ints)
    longs = work / "longs"
    _bootstrap(str(longs), "--base", str(ints), "--format", "flink", "--spec", str(_spec(work, "longs.yaml", LONG_SPEC)))
    ints_after = digest(ints)

    full = flink_job.job_description(flink_job.fixture_expected(FIXTURE))
    fixed_desc = fixed_description(full)
    dumps = flink_job.restore_declared_many(VERSION, [
        (base, full, "rocksdb"),
        (fixed, fixed_desc, "hashmap"), (fixed, fixed_desc, "rocksdb"),
        (standalone, fixed_desc, "rocksdb"),
        (ints, _description("Integer"), "hashmap"),
        (longs, _description("Long"), "hashmap"), (longs, _description("Long"), "rocksdb")])
    names = ("base", "fixed-hashmap", "fixed-rocksdb", "standalone", "ints", "longs-hashmap", "longs-rocksdb")
    return {"dumps": dict(zip(names, dumps)), "digests": [(before, after), (ints_before, ints_after)],
            "refused": refused, "paths": {"fixed": fixed, "standalone": standalone, "ints": ints, "longs": longs,
                                          "base": base}}


def _spec(work: Path, name: str, text: str) -> Path:
    (work / name).write_text(text)
    return work / name


def _fixed_proc(base_proc: dict) -> dict:
    """lk-proc as the fix writes it: the written states, count + 1 for even keys."""
    states = {n: copy.deepcopy(s) for n, s in base_proc["keyed_state"].items() if n in WRITTEN}
    states["count"]["values"] = {k: v + 1 if int(k) % 2 == 0 else v for k, v in states["count"]["values"].items()}
    return states


def test_the_fixed_operator_restores_with_the_fix_and_the_others_as_in_the_base(written):
    base = written["dumps"]["base"]["operators"]
    counts = base[PROC]["keyed_state"]["count"]["values"]
    assert len(counts) == 30 and sum(int(k) % 2 == 0 for k in counts) == 15  # the fix changes half of them
    for name in ("fixed-hashmap", "fixed-rocksdb", "standalone"):
        ops = written["dumps"][name]["operators"]
        assert ops[PROC]["keyed_state"] == _fixed_proc(base[PROC]), name
        assert ops[PROC].get("timers") in (None, {}), name
        for uid in ("lk-src", "lk-union-op", "lk-bcast", "lk-win"):
            assert _union_sorted(ops[uid]) == _union_sorted(base[uid]), (name, uid)


def test_the_base_is_never_written(written):
    for before, after in written["digests"]:
        assert before == after and before


def test_a_narrowing_is_refused_and_leaves_nothing(written):
    refused = written["refused"]
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: operator '{PROC}', state 'count', column 'count': Long values cannot be written as Integer "
        "(a narrowing); declare Long or cast it in the input's SQL")


def test_shallow_copies_depend_on_the_base_and_self_contained_ones_do_not(written):
    paths = written["paths"]
    fixed = statectl("validate", str(paths["fixed"]))
    assert fixed.returncode == 0, fixed.stderr
    assert "depends on savepoint" in fixed.stdout and str(paths["base"]) in fixed.stdout
    away = paths["base"].with_name("away")
    paths["base"].rename(away)
    try:
        gone = statectl("validate", str(paths["fixed"]))
    finally:
        away.rename(paths["base"])
    assert gone.returncode == 1
    assert "is gone" in gone.stderr + gone.stdout
    standalone = statectl("validate", str(paths["standalone"]))
    assert standalone.returncode == 0, standalone.stderr
    assert "depends on" not in standalone.stdout
    assert not list(paths["standalone"].glob("_statectl_lineage-*"))
    longs = statectl("validate", str(paths["longs"]))
    assert longs.returncode == 0, longs.stderr
    assert "depends on savepoint" in longs.stdout and str(paths["ints"]) in longs.stdout


def test_an_integer_state_written_as_long_restores_with_the_same_values(written):
    dumps = written["dumps"]
    ints = dumps["ints"]["operators"]
    assert ints["cnt"]["keyed_state"]["n"]["values"] == COUNTS
    for name in ("longs-hashmap", "longs-rocksdb"):
        ops = dumps[name]["operators"]
        assert ops["cnt"]["keyed_state"]["n"]["values"] == COUNTS, name
        assert ops["src"] == ints["src"], name
    info = json.loads(statectl("info", "--json", str(written["paths"]["longs"])).stdout)
    text = json.dumps(info)
    assert "LongSerializer" in text and "IntSerializer" not in text


# --- one-line refusals (one as a user's shell runs it) ----------------------------------------------

@pytest.fixture(scope="module")
def int_base(tmp_path_factory):
    work = tmp_path_factory.mktemp("flink-base-errors")
    (work / "counts.csv").write_text("id,n\n" + "".join(f"{k},{v}\n" for k, v in COUNTS.items()))
    (work / "offsets.csv").write_text("offset\n1\n2\n")
    _bootstrap(str(work / "ints"), "--spec", str(_spec(work, "ints.yaml", INT_SPEC)))
    return work


@pytest.mark.parametrize("name, query, flink, base, line", [
    ("no-base", "SELECT key, n FROM cnt", "", False,
     "error: operator 'cnt'.keyed.input: an sql input is a query over the base savepoint's tables; "
     "give the base with --base"),
    ("bad-sql", "SELECT key, n FROM cnt WHERE n >", "", True,
     "error: operator 'cnt'.keyed.input: query failed: [PARSE_SYNTAX_ERROR] Syntax error at or near end of "
     "input."),
    ("unknown-table", "SELECT key, n FROM nope", "", True, None),
    ("narrowing", "SELECT key, CAST(n AS BIGINT) AS n FROM cnt", "flink: {states: {n: Integer}}", True,
     "error: operator 'cnt', state 'n', column 'n': Long values cannot be written as Integer (a narrowing); "
     "declare Long or cast it in the input's SQL"),
    ("int-as-string", "SELECT key, n FROM cnt", "flink: {states: {n: String}}", True,
     "error: operator 'cnt', state 'n', column 'n': Integer values cannot be written as String (not a safe "
     "widening); declare Integer or cast it in the input's SQL"),
    ("write-statement", "INSERT INTO cnt SELECT 1", "", True,
     "error: operator 'cnt'.keyed.input.sql: statectl sql runs queries only (SELECT, WITH, VALUES, TABLE, "
     "FROM); the statement begins with INSERT"),
])
def test_refusals_are_one_line(int_base, name, query, flink, base, line):
    ints = int_base / "ints"
    before = digest(ints)
    spec = _spec(int_base, f"{name}.yaml", f"""
operators:
  - uid: cnt
    parallelism: 2
    {flink}
    keyed: {{key: key, input: {{sql: "{query}"}}, states: [{{name: n, kind: value, column: n}}]}}
""")
    out = int_base / f"out-{name}"
    args = ["bootstrap", str(out), "--format", "flink", "--spec", str(spec)] + (["--base", str(ints)] if base else [])
    # as a process where Spark's own output could reach the terminal: one case is enough, the
    # others fail at the same place in the same process
    result = (statectl_process if name == "bad-sql" else statectl)(*args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    if line is None:  # Spark's message names the table and lists the savepoint's views
        assert lines[0].startswith("error: operator 'cnt'.keyed.input: query failed: [TABLE_OR_VIEW_NOT_FOUND] "
                                   "The table or view `nope` cannot be found."), lines[0]
        assert lines[0].endswith(" Views: cnt, `cnt.timers`, `src.offsets`, catalogue"), lines[0]
    else:
        assert lines[0] == line
    assert digest(ints) == before
    assert not (out / "_metadata").exists()


def _n_values(savepoint: Path) -> dict:
    result = statectl("sql", str(savepoint), "SELECT key, n FROM cnt", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    return {r["key"]: r["n"] for r in map(json.loads, result.stdout.splitlines())}


def test_overwrite_replaces_a_flink_savepoint_only_once_the_new_one_is_complete(int_base):
    target = int_base / "over"
    spec = str(int_base / "ints.yaml")
    _bootstrap(str(target), "--spec", spec)
    first = {p.name for p in target.iterdir()}
    refused = statectl("bootstrap", str(target), "--spec", spec)
    assert refused.returncode == 1 and {p.name for p in target.iterdir()} == first
    _bootstrap(str(target), "--spec", spec, "--overwrite")
    second = {p.name for p in target.iterdir()}
    assert "_metadata" in second and not (first - {"_metadata"}) & second  # the old streams are gone
    assert _n_values(target) == COUNTS
    result = statectl("rescale", str(int_base / "ints"), str(target), "--max-parallelism", "256", "--overwrite")
    assert result.returncode == 0, result.stderr
    assert not (second - {"_metadata"}) & {p.name for p in target.iterdir()}
    assert _n_values(target) == COUNTS
    info = json.loads(statectl("info", "--json", str(target)).stdout)
    assert {op["uid"]: op["max_parallelism"] for op in info["operators"]} == {"cnt": 256, "src": 256}
