"""The round-trip law: `statectl rescale SP A --max-parallelism M1` then `statectl rescale A B
--max-parallelism M0` (the original) gives a savepoint B whose full read (every keyed table with
every column, TTL timestamps `<state>_ttl_ts` included, timers, every operator state; read by
the local engine) equals SP's row for row, key groups included; A reads SP's rows too, key groups
aside. `statectl modify SP C --rename OLD=NEW` reads SP's rows under the new uid. `statectl diff
SP B` finds nothing (so `--content-only` would not either), `statectl diff --content-only SP A`
finds nothing but the layout, and the real Flink restores B with exactly the job's state (B of a
RocksDB native savepoint is native again, A too: the law holds for native outputs).

Covered: the suite's Flink 2.3 job (default states: TTL and timers included) on hashmap and
RocksDB, canonical and native savepoints; a Flink 1.20.3 and a Flink 1.17.2 canonical savepoint
(a 1.x `_metadata`, version 4, holds no uids: its operators are rescaled under their operator ids
and B keeps version 4, restored by the release that wrote SP); statectl's own canonical and native
(RocksDB) formats bootstrapped from examples/spec.yaml; and a property test over random max
parallelisms of the own canonical format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support import flink_job
from support.cli_runner import statectl
from statectl.readers.local import local_table
from statectl.readers.resolve import KEYED, TableChoice
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.formats import load
from support.full_read import full_read
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # rescales every savepoint of the suite there and back

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "spec.yaml"

FLINK_23 = {f"2.3.0-{b}-{f}": dict(backend=b, format=f) for b in ("hashmap", "rocksdb")
            for f in ("canonical", "native")}
FLINK_1X = {f"{v}-hashmap-canonical": dict(backend="hashmap", format="canonical") for v in ("1.20.3", "1.17.2")}
FLINK = {"2.3.0": FLINK_23, **{name.split("-")[0]: {name: shape} for name, shape in FLINK_1X.items()}}
OWN = {"own-canonical": "canonical", "own-rocksdb": "rocksdb"}
CASES = sorted([*FLINK_23, *FLINK_1X, *OWN])
M1 = {**{name: 300 for name in FLINK_23}, **{name: 1000 for name in FLINK_1X}, **{name: 256 for name in OWN}}


def without_key_groups(read: dict) -> dict:
    def strip(row: str) -> str:
        d = json.loads(row)
        d.pop("_key_group", None)
        return json.dumps(d, sort_keys=True)
    return {k: sorted(map(strip, rows)) for k, rows in read.items()}


def _ok(result) -> None:
    assert result.returncode == 0, (result.args if hasattr(result, "args") else None, result.stderr)


def _rescale(source: Path, target: Path, max_p: int) -> Path:
    _ok(statectl("rescale", str(source), str(target), "--max-parallelism", str(max_p)))
    return target


@pytest.fixture(scope="module")
def bases(flink_snapshots, tmp_path_factory):
    """{case: (its savepoint SP, the job's Snapshot or None, its max parallelism M0)}."""
    out = {}
    for version, shapes in FLINK.items():
        for name, snap in zip(shapes, flink_snapshots(version, list(shapes.values()))):
            out[name] = (snap.path, snap, int(snap.expected["scenario"]["knobs"]["max-parallelism"]))
    for name, fmt in OWN.items():
        path = tmp_path_factory.mktemp(name) / "sp"
        _ok(statectl("bootstrap", "--spec", str(SPEC), "--format", fmt, str(path)))
        out[name] = (path, None, 128)
    return out


def _label(name: str, uid: str) -> str:
    """How statectl names the job's operator *uid* in case *name*'s savepoints: a Flink 1.x
    `_metadata` (version 4) holds no uids, so its operators are known by OperatorID only."""
    return flink_job.operator_id(uid)["operator_id"] if name in FLINK_1X else uid


@pytest.fixture(scope="module")
def trips(bases, tmp_path_factory):
    """{case: (SP, C = SP with proc renamed, A at M1, B back at M0)}; SP is never written."""
    out = {}
    for name in CASES:
        sp, _, m0 = bases[name]
        work = tmp_path_factory.mktemp(f"trip-{name}")
        before = digest(sp)
        c = work / "c"
        _ok(statectl("modify", str(sp), str(c), "--rename", f"{_label(name, 'proc')}=proc-renamed"))
        a = _rescale(sp, work / "a", M1[name])
        b = _rescale(a, work / "b", m0)
        assert digest(sp) == before
        out[name] = (sp, c, a, b)
    return out


_ORIGINALS: dict = {}


def _check_full_read(name: str, sp: Path) -> dict:
    """SP's full read (once per case), checked to hold what the law is about."""
    if sp in _ORIGINALS:
        return _ORIGINALS[sp]
    original = _ORIGINALS[sp] = full_read(sp)
    keyed = [k for k in original if k[1] == "keyed"]
    assert keyed and all(original[k] for k in keyed)  # every keyed table holds rows
    assert any(original[k] for k in original if k[1] == "timers")
    assert any(k[1] == "operator_state" for k in original)
    if name not in OWN:
        loaded = load(str(sp))
        proc = local_table(loaded, TableChoice(loaded.operator(_label(name, "proc")), KEYED))
        assert {"ttl_last_ttl_ts", "ttl_seen_ttl_ts"} <= set(proc.column_names)
    return original


def _round_trip_reads_the_same_rows(name: str, sp: Path, a: Path, b: Path) -> None:
    original = _check_full_read(name, sp)
    assert {op.max_parallelism for op in load(str(a)).operators if op.keyed is not None} == {M1[name]}
    at_m1 = full_read(a)
    assert without_key_groups(at_m1) == without_key_groups(original)
    assert at_m1 != original  # the keys did move to other key groups
    m0 = {op.max_parallelism for op in load(str(sp)).operators if op.keyed is not None}
    assert {op.max_parallelism for op in load(str(b)).operators if op.keyed is not None} == m0
    assert full_read(b) == original  # `_key_group` included: exactly the original's


@pytest.mark.parametrize("name", CASES)
def test_rescale_there_and_back_reads_the_same_rows(trips, name):
    sp, _, a, b = trips[name]
    _round_trip_reads_the_same_rows(name, sp, a, b)


@pytest.mark.parametrize("name", CASES)
def test_a_renamed_operator_reads_the_same_rows(trips, name):
    sp, c, _, _ = trips[name]
    old, new = _label(name, "proc"), _label(name, "proc-renamed")
    labels = {op.label for op in load(str(c)).operators}
    assert new in labels and old not in labels
    assert full_read(c, {new: old}) == _check_full_read(name, sp)


# `diff --content-only SP A` (max parallelism differs, and a native savepoint's A is canonical)
# for one Flink shape and the own formats: each diff of a Flink savepoint costs seconds.
CONTENT_ONLY = {"2.3.0-rocksdb-native", *OWN}
# Small tables the same on both sides are confirmed without Spark (readers/diff_local.py); one Flink
# case is compared by Spark's joins throughout.
SPARK_DIFF = "2.3.0-rocksdb-native"


@pytest.mark.parametrize("name", CASES)
def test_diff_finds_nothing_after_the_round_trip(trips, name):
    """`diff SP B` exits 0 (so `diff --content-only SP B` would too: it ignores more); SP and A
    differ in layout only."""
    sp, _, a, b = trips[name]
    runs = [[str(sp), str(b)]] + ([["--content-only", str(sp), str(a)]] if name in CONTENT_ONLY else [])
    if name == SPARK_DIFF:
        runs = [[*args, "--engine", "spark"] for args in runs]
    for args in runs:
        result = statectl("diff", *args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    if name in OWN:  # the check is not vacuous: without --content-only the layout counts
        result = statectl("diff", str(sp), str(a))
        assert result.returncode == 1, (result.stdout, result.stderr)


@pytest.mark.parametrize("name", sorted([*FLINK_23, *FLINK_1X]))
def test_a_flink_round_trip_keeps_the_metadata_version_and_the_operators_identity(trips, name):
    """A and B are written as the release that wrote SP writes them: SP's `_metadata` version
    (4 for Flink 1.x), every operator under SP's operator id, uid and name (a 1.x `_metadata` has
    neither uids nor names: its operators are known by id alone), in SP's order."""
    sp, _, a, b = trips[name]

    def identities(path: Path) -> tuple:
        meta = parse_metadata((path / "_metadata").read_bytes())
        return meta.version, [(op.operator_id, op.uid, op.name) for op in meta.operators]

    version, ops = identities(sp)
    assert version == (4 if name in FLINK_1X else 6)
    uids = {uid for _, uid, _ in ops}
    assert uids == {None} if name in FLINK_1X else "proc" in uids
    assert identities(a) == identities(b) == (version, ops)


@pytest.mark.parametrize("name", sorted(FLINK_23))
def test_a_flink_round_trip_keeps_the_keyed_layout(trips, name):
    """A RocksDB native base's keyed operators are native in A and B; any other base's canonical."""
    sp, _, a, b = trips[name]
    want = "rocksdb-native" if name.endswith("rocksdb-native") else "canonical"
    for path in (a, b):
        layouts = {op.keyed.layout for op in load(str(path)).operators if op.keyed is not None}
        assert layouts == {want}, (path, layouts)


def test_flink_restores_the_round_trip_with_the_jobs_state(bases, trips):
    for version, shapes in FLINK.items():
        items = []
        for name in sorted(shapes):
            _, snap, _ = bases[name]
            b = trips[name][3]
            # B of a RocksDB native base is native again (its backend restores it); of a heap-native
            # base canonical: restored into the other backend than the job's too
            for backend in ("hashmap", "rocksdb") if name.endswith("hashmap-native") else (shapes[name]["backend"],):
                items.append((flink_job.Snapshot(b, snap.expected, b.parent / f"restore-{backend}"), backend))
        dumps = flink_job.restore_snapshots(version, items)
        for (snap, backend), dump in zip(items, dumps):
            assert flink_job.restore_mismatches(snap.expected, dump) == [], (snap.path, backend)
            proc = dump["operators"]["proc"]
            assert len(proc["keyed_state"]["count"]["values"]) == int(snap.expected["scenario"]["knobs"]["keys"])
            assert sum(map(len, proc["timers"]["event_time"]["values"].values())) > 0
            assert proc["keyed_state"]["ttl_last"]["values"]


PROC_PARALLELISM = 2  # examples/spec.yaml: the one keyed operator's parallelism (union-op runs at 3)


@pytest.fixture(scope="module")
def own_canonical(bases):
    sp = bases["own-canonical"][0]
    keyed = [op for op in load(str(sp)).operators if op.keyed is not None]
    assert [(op.parallelism, op.max_parallelism) for op in keyed] == [(PROC_PARALLELISM, 128)]
    return sp, _check_full_read("own-canonical", sp)


@settings(max_examples=4, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_p=st.integers(min_value=PROC_PARALLELISM, max_value=1024).filter(lambda m: m != 128))
@example(max_p=PROC_PARALLELISM)  # as many key groups as subtasks, fewer than union-op's subtasks
@example(max_p=1024)
def test_own_canonical_round_trip_over_random_max_parallelisms(own_canonical, tmp_path_factory, max_p):
    sp, original = own_canonical
    work = tmp_path_factory.mktemp("prop")
    a = _rescale(sp, work / "a", max_p)
    assert without_key_groups(full_read(a)) == without_key_groups(original)
    b = _rescale(a, work / "b", 128)
    assert full_read(b) == original
    shutil.rmtree(work)
