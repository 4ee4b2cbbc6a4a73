"""`check` and `remap` on real Flink jobs changed as users change them (docs/UPGRADES.md):

- the DataStream job (Flink 2.3 and 1.20; canonical savepoints of the hashmap backend, and
  native RocksDB ones, whose SST files stay where they lie) with every uid renamed (uid_prefix v2-, so every name too): check matches
  each stateful operator by its states, remap writes OLD's state under NEW's ids, and the renamed
  job restores it without allowNonRestoredState, holding OLD's state (not NEW's: NEW's savepoint
  was made from other input);
- the SQL job (Flink 2.3, hashmap and RocksDB) with one more statement ahead of the others (extra_statement): every stateful
  operator's id and node number changes; check matches each by SQL node kind and state (the
  three deduplications and the two window aggregates in plan order), lists the new statement's
  aggregate as starting empty, and the changed job restores remap's output and continues each
  statement from OLD's state exactly as OLD's own job restored from OLD does;
- the SQL job's extra statement with one more aggregate (extra_aggregate, Flink 2.3 and 1.20):
  check says partly compatible, remap writes the accumulators with the initial value given;
- the SQL job with table.exec.state.ttl switched on (state_ttl): Flink 2.3 migrates it itself as
  check says; for Flink 1.20 check says convertible and remap stamps every value;
- the DataStream job with an operator that had no uid given one (no_uid), and with a chain split
  after an operator without a uid (chain_split), Flink 2.3 and 1.20: its hashed id changes, check
  matches it by name (by its states on 1.20), the changed job refuses OLD and restores remap's
  output holding OLD's state;
- the SQL job's extra statement with its filter changed (extra_filter), Flink 2.3 and 1.20: check
  says it restores as is, and it does, continuing from OLD's state."""

from __future__ import annotations

import json

import pytest

from support import flink_job
from support.cli_runner import statectl
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # real Flink jobs

VERSION = "2.3.0"
SHAPE = dict(backend="hashmap", format="canonical")


def _check(old, new) -> dict:
    result = statectl("check", str(old), "--against", str(new), "--json")
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


RENAMED = {"2.3.0 hashmap canonical": ("2.3.0", SHAPE), "1.20.3 hashmap canonical": ("1.20.3", SHAPE),
           "2.3.0 rocksdb native": ("2.3.0", dict(backend="rocksdb", format="native"))}


@pytest.fixture(scope="module", params=list(RENAMED))
def renamed(request, tmp_path_factory):
    """OLD (the job as it is), NEW (every uid renamed, other input), remap's output, the release."""
    version, shape = RENAMED[request.param]
    try:
        old, new = flink_job.make_snapshots(version, [dict(shape), dict(shape, uid_prefix="v2-", seed=99)])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    out = tmp_path_factory.mktemp("remap") / "out"
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert result.returncode == 0, result.stderr
    assert digest(old.path) == before
    return old, new, out, version


def test_check_matches_every_renamed_operator_by_its_states(renamed):
    old, new, _, version = renamed
    doc = _check(old.path, new.path)
    got = {op["old_operator_id"]: (op["status"], op["new_operator_id"], op["how"], op["level"])
           for op in doc["operators"]}
    ids = {uid: flink_job.operator_id(uid)["operator_id"] for uid in old.expected["operators"]}
    assert got == {ids[uid]: ("matched", flink_job.operator_id("v2-" + uid)["operator_id"], "state names and types",
                              "identical") for uid in ("src", "union-op", "bcast", "proc", "win")}
    assert doc["starting_empty"] == []
    if version.startswith("2."):  # Flink 1.x _metadata has no uids: operators are named by id there
        assert {op["old"]: op["new"] for op in doc["operators"]} == {
            uid: "v2-" + uid for uid in ("src", "union-op", "bcast", "proc", "win")}


def test_the_renamed_job_restores_remaps_output_with_olds_state(renamed, tmp_path):
    old, new, out, version = renamed
    check = statectl("check", str(out), "--against", str(new.path))
    assert check.returncode == 0, check.stdout
    knobs = {k.replace("-", "_"): v for k, v in old.expected["scenario"]["knobs"].items()
             if k.replace("-", "_") in flink_job.DEFAULTS and k != "out"}
    dump = flink_job.restore(version, out, tmp_path / "restored", **{**knobs, "uid_prefix": "v2-"})
    as_new = {**old.expected, "operators": {"v2-" + uid: dict(op, uid="v2-" + uid)
                                            for uid, op in old.expected["operators"].items()}}
    assert flink_job.restore_mismatches(as_new, dump) == []


@pytest.mark.parametrize("renamed", ["2.3.0 hashmap canonical"], indirect=True)
def test_without_remap_the_renamed_job_refuses_old(renamed, tmp_path):
    """One case (Flink 2.3, hashmap) is enough to show the failure remap avoids."""
    old, _, _, version = renamed
    knobs = {k.replace("-", "_"): v for k, v in old.expected["scenario"]["knobs"].items()
             if k.replace("-", "_") in flink_job.DEFAULTS and k != "out"}
    with pytest.raises(flink_job.FlinkJobError, match="Cannot map checkpoint/savepoint state"):
        flink_job.restore(version, old.path, tmp_path / "restored", **{**knobs, "uid_prefix": "v2-"})


@pytest.fixture(scope="module", params=["hashmap", "rocksdb"])
def sql_pair(request):
    """The SQL job (OLD) and with one more statement ahead of the others (NEW), canonical
    savepoints of each backend; (OLD, NEW, backend)."""
    shape = dict(SHAPE, backend=request.param)
    try:
        return (*flink_job.make_sql_snapshots(VERSION, [dict(shape), dict(shape, extra_statement=True)]),
                request.param)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


def test_check_matches_the_sql_operators_by_node_kind_and_state(sql_pair):
    old, new, _ = sql_pair
    doc = _check(old.path, new.path)
    statement = {o["operator_id"]: o["statement"] for o in old.expected["operators"].values()}
    statement_new = {o["operator_id"]: o["statement"] for o in new.expected["operators"].values()}
    assert len(doc["operators"]) == len(old.expected["operators"]) == 11
    for op in doc["operators"]:
        assert op["status"] == "matched" and op["old_operator_id"] != op["new_operator_id"], op
        assert op["how"].startswith("SQL node kind and state"), op
        assert statement_new[op["new_operator_id"]] == statement[op["old_operator_id"]], op
        assert op["level"] == "identical"
    extra = next(n for n, o in new.expected["operators"].items() if o["statement"] == "extra_agg")
    assert doc["starting_empty"] == [extra]


def test_the_changed_sql_job_restores_remaps_output_and_continues(sql_pair, tmp_path):
    old, new, backend = sql_pair
    out = tmp_path / "out"
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert result.returncode == 0, result.stderr
    base, changed = flink_job.restore_sqls(VERSION, [(old, dict(backend=backend)),
                                                     (out, dict(backend=backend, extra_statement=True))])
    assert set(changed["statements"]) == set(base["statements"]) | {"extra_agg"}
    _continues_alike(old, base, changed)


def _continues_alike(old, base: dict, changed: dict) -> None:
    """Every statement of *old*'s job ends the second batch with the same table in the changed
    job as in *old*'s own job restored from *old* (its changelog applied to the table *old* had:
    a statement that started empty would retract rows it never emitted); those whose changelog
    does not depend on the order rows arrive in from the two source subtasks, change by change."""
    for name, st in old.expected["statements"].items():
        table, rows = st["received_output"], changed["statements"][name]["received_changelog"]
        assert flink_job.materialize(table, rows) == \
            flink_job.materialize(table, base["statements"][name]["received_changelog"]), name
        if name in ("group_agg", "dedup_first"):
            assert _sorted(rows) == _sorted(base["statements"][name]["received_changelog"]), name


def _sorted(rows: list) -> list:
    return sorted(rows, key=json.dumps)


def test_without_remap_the_changed_sql_job_refuses_old(sql_pair):
    old, _, backend = sql_pair
    with pytest.raises(flink_job.FlinkJobError, match="Cannot map checkpoint/savepoint state"):
        flink_job.restore_sql(VERSION, old.path, backend=backend, extra_statement=True)


@pytest.fixture(scope="module", params=flink_job.SQL_VERSIONS)
def typed_pair(request):
    """The SQL job with the extra statement grouping by CAST(name AS VARCHAR(64)) (OLD) and by
    name, a STRING (NEW): the key's type is longer, its bytes the same; each SQL release."""
    try:
        return (*flink_job.make_sql_snapshots(request.param, [
            dict(SHAPE, extra_statement=True, name_type="VARCHAR(64)"), dict(SHAPE, extra_statement=True)]),
            request.param)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


def test_a_longer_varchar_key_is_converted_by_its_serializer_snapshot(typed_pair, tmp_path):
    old, new, version = typed_pair
    doc = _check(old.path, new.path)
    changed = {op["old"]: op for op in doc["operators"] if op["level"] != "identical"}
    assert len(doc["operators"]) == 12 and len(changed) == 1, changed
    (op,) = changed.values()
    assert op["level"] == "convertible" and op["status"] in ("restored", "matched")
    key = next(s for s in op["states"] if s["kind"] == "key")
    assert key["reasons"] == ["key.f0: VARCHAR(64) became VARCHAR(2147483647)"]
    assert key["rewrites"] == "serializer snapshot"
    out = tmp_path / "out"
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert result.returncode == 0, result.stderr
    assert digest(old.path) == before
    assert statectl("check", str(out), "--against", str(new.path)).returncode == 0
    with pytest.raises(flink_job.FlinkJobError):  # the new job refuses OLD's key serializer itself
        flink_job.restore_sql(version, old.path, backend=SHAPE["backend"], extra_statement=True)
    base, remapped = flink_job.restore_sqls(version, [
        (old, dict(backend=SHAPE["backend"])), (out, dict(backend=SHAPE["backend"], extra_statement=True))])
    assert set(base["statements"]) == set(remapped["statements"])
    _continues_alike(old, base, remapped)
    extra = [r["received_changelog"] for r in (base["statements"]["extra_agg"], remapped["statements"]["extra_agg"])]
    assert _sorted(extra[0]) == _sorted(extra[1]) and any(r[0] == "-U" for r in extra[1])  # its counts continue


@pytest.fixture(scope="module", params=flink_job.SQL_VERSIONS)
def aggregate_pair(request):
    """The SQL job with the extra statement (OLD) and with one more aggregate in its SELECT, SUM(v)
    (NEW: extra_aggregate): the same operator ids, the accumulator row of its GroupAggregate grown;
    each SQL release; (OLD, NEW, release)."""
    try:
        return (*flink_job.make_sql_snapshots(request.param, [
            dict(SHAPE, extra_statement=True), dict(SHAPE, extra_statement=True, extra_aggregate="SUM(v)")]),
            request.param)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


def test_an_aggregate_added_to_a_select_is_partly_compatible_and_starts_from_its_initial_value(aggregate_pair, tmp_path):
    old, new, version = aggregate_pair
    doc = _check(old.path, new.path)
    changed = [op for op in doc["operators"] if op["level"] != "identical"]
    assert len(doc["operators"]) == 12 and len(changed) == 1, changed
    (op,) = changed
    assert op["status"] == "restored" and op["level"] == "partly compatible"
    (acc,) = [s for s in op["states"] if s["name"] == "accState"]
    assert acc["rewrites"] == "values" and acc["added"] == ["f1"], acc
    out = tmp_path / "out"
    refused = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert refused.returncode == 1 and "--initial" in refused.stderr and not out.exists()
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path),
                      "--initial", f"{op['old']}:accState:f1=null")  # SUM starts from null
    assert result.returncode == 0, result.stderr
    assert digest(old.path) == before
    assert statectl("check", str(out), "--against", str(new.path)).returncode == 0
    knobs = dict(backend=SHAPE["backend"], extra_statement=True, extra_aggregate="SUM(v)")
    with pytest.raises(flink_job.FlinkJobError):  # the new job refuses OLD's accumulator serializer itself
        flink_job.restore_sql(version, old.path, **knobs)
    base, remapped = flink_job.restore_sqls(version, [(old, dict(backend=SHAPE["backend"])), (out, knobs)])
    _continues_alike(old, base, remapped)
    rows = remapped["statements"]["extra_agg"]["received_changelog"]
    assert _sorted([r[:3] for r in rows]) == _sorted(base["statements"]["extra_agg"]["received_changelog"])
    first = {}  # OLD's keys: the first update retracts the row OLD's accumulator gives (its SUM null)
    for r in rows:
        if r[0] == "-U":
            first.setdefault(r[1], r)
    assert first and all(r[3] is None for r in first.values()), first
    assert all(r[3] is not None for r in rows if r[0] in ("+I", "+U"))


def test_ttl_switched_on_is_migrated_by_flink_itself_as_check_says():
    """The SQL job (OLD) and the same job with table.exec.state.ttl (NEW, knob state_ttl): every
    state of the GROUP BYs, deduplications, Top-N and join gets TTL; check says Flink migrates it
    (exit 0, nothing to remap), and the new job restores OLD itself and continues every statement."""
    try:
        old, new = flink_job.make_sql_snapshots(VERSION, [dict(SHAPE), dict(SHAPE, state_ttl="1 d")])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    result = statectl("check", str(old.path), "--against", str(new.path), "--json")
    assert result.returncode == 0, result.stdout
    doc = json.loads(result.stdout)
    assert {op["status"] for op in doc["operators"]} == {"restored"}
    migrated = [s for op in doc["operators"] for s in op["states"] if s["level"] == "flink migrates"]
    assert len(migrated) >= 10 and all("TTL switched on" in s["reasons"][0] for s in migrated), migrated
    base, ttl = flink_job.restore_sqls(VERSION, [(old, dict(backend=SHAPE["backend"])),
                                                 (old, dict(backend=SHAPE["backend"], state_ttl="1 d"))])
    _continues_alike(old, base, ttl)


def test_ttl_switched_on_for_flink_1_is_converted_by_remap(tmp_path):
    """Flink 1.20 does not migrate a state whose TTL is switched on: the SQL job with
    table.exec.state.ttl (NEW) refuses OLD; check calls those states convertible by rewriting their
    values, remap stamps every value with the time of the remap, and the new job restores remap's
    output and continues every statement."""
    version = "1.20.3"
    try:
        old, new = flink_job.make_sql_snapshots(version, [dict(SHAPE), dict(SHAPE, state_ttl="1 d")])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    doc = _check(old.path, new.path)
    converted = [s for op in doc["operators"] for s in op["states"] if s["level"] == "convertible"]
    assert len(converted) >= 10 and all(s["rewrites"] == "values" and "TTL switched on" in s["reasons"][0]
                                        for s in converted), converted
    out = tmp_path / "out"
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert result.returncode == 0, result.stderr
    assert digest(old.path) == before
    assert statectl("check", str(out), "--against", str(new.path)).returncode == 0
    with pytest.raises(flink_job.FlinkJobError):  # Flink 1.20 refuses OLD's states without TTL itself
        flink_job.restore_sql(version, old.path, backend=SHAPE["backend"], state_ttl="1 d")
    base, ttl = flink_job.restore_sqls(version, [(old, dict(backend=SHAPE["backend"])),
                                                 (out, dict(backend=SHAPE["backend"], state_ttl="1 d"))])
    _continues_alike(old, base, ttl)


def test_values_of_a_native_rocksdb_snapshot_are_refused_in_one_line(tmp_path):
    """remap converts values in canonical savepoints only: a native RocksDB one is one line, exit 1,
    nothing written, OLD untouched."""
    native = dict(backend="rocksdb", format="native", extra_statement=True)
    try:
        old, new = flink_job.make_sql_snapshots(VERSION, [native, dict(native, extra_aggregate="SUM(v)")])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    op = next(op for op in _check(old.path, new.path)["operators"] if op["level"] == "partly compatible")
    out = tmp_path / "out"
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path),
                      "--initial", f"{op['old']}:accState:f1=null")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "native RocksDB snapshot" in result.stderr and not out.exists() and digest(old.path) == before


# (OLD's knobs, NEW's knobs) of the DataStream job changed as users change it: an operator that had
# no uid given one (its hashed id becomes its uid's), and a chain split after an operator without a
# uid (its hashed id counts its chained outputs).
CHANGED = {"uid given": (dict(no_uid="proc"), {}),
           "chain split": (dict(no_uid="src"), dict(no_uid="src", chain_split="union-op"))}


@pytest.fixture(scope="module", params=[(c, v) for c in CHANGED for v in ("2.3.0", "1.20.3")],
                ids=lambda p: f"{p[0]} {p[1]}")
def changed_job(request, tmp_path_factory):
    """OLD, NEW (other input), remap's output, NEW's knobs, the operator whose id changed, the release."""
    case, version = request.param
    old_knobs, new_knobs = CHANGED[case]
    try:
        old, new = flink_job.make_snapshots(version, [dict(SHAPE, **old_knobs), dict(SHAPE, **new_knobs, seed=99)])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    out = tmp_path_factory.mktemp("remap") / "out"
    before = digest(old.path)
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert result.returncode == 0, result.stderr
    assert digest(old.path) == before
    return old, new, out, new_knobs, old_knobs["no_uid"], version


def test_check_matches_the_operator_whose_hashed_id_changed_by_its_name(changed_job):
    """By its name on Flink 2.x; Flink 1.x `_metadata` has no names: there by its states."""
    old, new, _, _, role, version = changed_job
    doc = _check(old.path, new.path)
    moved = [op for op in doc["operators"] if op["status"] != "restored"]
    assert [(op["status"], op["how"], op["level"]) for op in moved] == [
        ("matched", "name" if version.startswith("2.") else "state names and types", "identical")]
    if version.startswith("2."):
        name = "Source: src" if role == "src" else role
        assert (moved[0]["old"], moved[0]["new"]) == (name, name)
    assert doc["starting_empty"] == []
    assert {op["level"] for op in doc["operators"]} == {"identical"}


def test_the_changed_job_refuses_old_and_restores_remaps_output(changed_job, tmp_path):
    old, new, out, new_knobs, _, version = changed_job
    knobs = dict(SHAPE, **new_knobs)
    with pytest.raises(flink_job.FlinkJobError, match="Cannot map checkpoint/savepoint state"):
        flink_job.restore(version, old.path, tmp_path / "refused", **knobs)
    assert statectl("check", str(out), "--against", str(new.path)).returncode == 0
    dump = flink_job.restore(version, out, tmp_path / "restored", **knobs)
    assert flink_job.restore_mismatches(old.expected, dump) == []


@pytest.mark.parametrize("version", flink_job.SQL_VERSIONS)
def test_a_changed_filter_restores_as_is_and_continues(version):
    """The extra statement's WHERE v > 100 changed to v > 1000: the same operator ids and states;
    check says NEW restores OLD unchanged (exit 0), and the new job restores OLD itself: every
    statement continues, the extra statement from OLD's counts (the first update of each name
    retracts the row OLD's job had)."""
    try:
        old, new = flink_job.make_sql_snapshots(version, [dict(SHAPE, extra_statement=True, extra_filter="v > 100"),
                                                          dict(SHAPE, extra_statement=True, extra_filter="v > 1000")])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    result = statectl("check", str(old.path), "--against", str(new.path), "--json")
    assert result.returncode == 0, result.stdout
    doc = json.loads(result.stdout)
    assert {(op["status"], op["level"]) for op in doc["operators"]} == {("restored", "identical")}
    base, changed = flink_job.restore_sqls(version, [
        (old, dict(backend=SHAPE["backend"])), (old, dict(backend=SHAPE["backend"], extra_filter="v > 1000"))])
    _continues_alike(old, base, changed)

    def first_retractions(result):
        first = {}
        for r in result["statements"]["extra_agg"]["received_changelog"]:
            if r[0] == "-U":
                first.setdefault(r[1], r)
        return first
    got, want = first_retractions(changed), first_retractions(base)
    assert got and all(got[name] == want[name] for name in got), (got, want)


def test_flink_1_sql_job_with_an_extra_statement_is_remapped_with_map(tmp_path):
    """Flink 1.20's `_metadata` has no operator names: the two window aggregates (same node kind,
    same states) are ambiguous by their states alone; `check` says so, `remap` refuses them in one
    line, and with `--map` by operator id the changed 1.20 job restores remap's output and every
    statement continues as OLD's own job restored from OLD does."""
    version = "1.20.3"
    try:
        old, new = flink_job.make_sql_snapshots(version, [dict(SHAPE), dict(SHAPE, extra_statement=True)])
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    ids = {side: {o["statement"]: o["operator_id"] for o in snap.expected["operators"].values()}
           for side, snap in (("old", old), ("new", new))}
    doc = _check(old.path, new.path)
    ambiguous = {op["old_operator_id"] for op in doc["operators"] if op["status"] == "ambiguous"}
    assert ambiguous == {ids["old"]["tumble"], ids["old"]["hop"]}
    assert all(op["status"] == "matched" and ids["new"][st] == op["new_operator_id"]
               for op in doc["operators"] for st, i in ids["old"].items() if op["old_operator_id"] == i
               and i not in ambiguous)
    out = tmp_path / "out"
    refused = statectl("remap", str(old.path), str(out), "--against", str(new.path))
    assert refused.returncode == 1 and "ambiguous" in refused.stderr and not out.exists()
    maps = [arg for st in ("tumble", "hop") for arg in ("--map", f"{ids['old'][st]}={ids['new'][st]}")]
    result = statectl("remap", str(old.path), str(out), "--against", str(new.path), *maps)
    assert result.returncode == 0, result.stderr
    base, changed = flink_job.restore_sqls(version, [(old, dict(backend=SHAPE["backend"])),
                                                     (out, dict(backend=SHAPE["backend"], extra_statement=True))])
    assert set(changed["statements"]) == set(base["statements"]) | {"extra_agg"}
    _continues_alike(old, base, changed)
