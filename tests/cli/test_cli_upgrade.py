"""`statectl check` (and `remap`'s mistakes) on the dev fixtures: Flink 2.x savepoints of one
job made with different key types, uid prefixes (lk-, pj-) and parallelism."""

from __future__ import annotations

import json

import pytest

from support.cli_runner import statectl
from support.flink_expect import FIXTURES

LONG = FIXTURES / "long-hashmap-canonical" / "savepoint"
POJO = FIXTURES / "pojo-hashmap-canonical" / "savepoint"


def _check(*args) -> tuple[int, dict]:
    result = statectl("check", *map(str, args), "--json")
    return result.returncode, json.loads(result.stdout) if result.stdout else {}


def test_a_savepoint_restores_itself_unchanged():
    code, doc = _check(LONG, "--against", LONG)
    assert code == 0 and doc["restores_unchanged"]
    assert {op["status"] for op in doc["operators"]} == {"restored"}
    assert {op["how"] for op in doc["operators"]} == {"same operator id"}


def test_another_job_every_operator_matched_lost_or_empty_with_the_reason():
    code, doc = _check(LONG, "--against", POJO)
    assert code == 1 and not doc["restores_unchanged"]
    ops = {op["old"]: op for op in doc["operators"]}
    assert ops["lk-union-op"]["new"] == "pj-union-op" and ops["lk-union-op"]["how"] == "state names and types"
    assert ops["lk-union-op"]["level"] == "identical"
    assert ops["lk-proc"]["status"] == "lost"  # its key type changed: no state of pj-proc alike
    assert "pj-proc" in doc["starting_empty"]
    win = ops["lk-win"]  # a window of another key type: matched by state names, incompatible, named
    assert win["how"] == "state names" and win["level"] == "incompatible"
    assert "key: long became String" in [r for s in win["states"] for r in s["reasons"]]


def test_map_and_drop_decide_for_the_matching():
    code, doc = _check(LONG, "--against", POJO, "--map", "lk-proc=pj-proc", "--drop", "lk-win")
    ops = {op["old"]: op for op in doc["operators"]}
    assert ops["lk-proc"]["status"] == "matched" and ops["lk-proc"]["how"] == "--map"
    assert ops["lk-win"]["status"] == "dropped"


@pytest.mark.parametrize("args,message", [
    (["--against", "nowhere"], "not a savepoint"),
    (["--against", str(POJO), "--map", "nope=pj-proc"], "OLD has no operator with uid, operator id or name 'nope'"),
    (["--against", str(POJO), "--map", "lk-proc=nope"], "NEW has no operator"),
    (["--against", str(POJO), "--map", "lk-proc"], "--map takes OLD=NEW"),
    (["--against", str(FIXTURES.parent / "golden" / "canonical" / "savepoint")], "not an Apache Flink savepoint"),
])
def test_mistakes_are_one_line_and_exit_2(tmp_path, args, message):
    result = statectl("check", str(LONG), *[a.replace("nowhere", str(tmp_path)) for a in args])
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def _remap(tmp_path, *args):
    out = tmp_path / "out"
    return out, statectl("remap", str(LONG), str(out), "--against", str(POJO), *args)


@pytest.mark.parametrize("args,message", [
    ([], "1 operator(s) of OLD have no place in NEW: lk-proc (lost); say where with --map"),
    (["--map", "lk-proc=pj-proc", "--drop", "lk-win"], "operator lk-proc -> pj-proc: state"),
    (["--map", "lk-proc=nope"], "NEW has no operator"),
])
def test_remap_refuses_in_one_line_exits_1_and_writes_nothing(tmp_path, args, message):
    from support.savepoint_rows import digest

    before = digest(LONG)
    out, result = _remap(tmp_path, *args)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not out.exists() and digest(LONG) == before


def test_remap_writes_olds_state_under_news_ids(tmp_path):
    out, result = _remap(tmp_path, "--drop", "lk-proc", "--drop", "lk-win")
    assert result.returncode == 0, result.stderr
    code, doc = _check(out, "--against", POJO)
    ops = {op["old"]: op for op in doc["operators"]}
    assert {label: (op["status"], op["level"]) for label, op in ops.items()} == {
        label: ("restored", "identical") for label in ("pj-union-op", "pj-src", "pj-bcast")}
    assert all(not op["notes"] or "max parallelism" not in " ".join(op["notes"]) for op in ops.values())


def test_a_damaged_new_snapshot_never_ends_in_a_traceback(tmp_path):
    """NEW with random bytes changed or cut (its `_metadata` or a state file): a check, or one
    statectl error; never another exception."""
    import random
    import shutil

    from statectl import StatectlError, check_upgrade

    rng = random.Random(41)
    files = sorted(p.relative_to(POJO) for p in POJO.rglob("*") if p.is_file())
    for i in range(60):
        new = tmp_path / f"new-{i}"
        shutil.copytree(POJO, new)
        target = new / rng.choice(files)
        data = bytearray(target.read_bytes())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data) + 1)]
        target.write_bytes(bytes(data))
        try:
            check_upgrade(LONG, new).to_json()
        except StatectlError:
            pass


@pytest.mark.parametrize("initial,message", [
    ("lk-proc", "--initial takes OPERATOR:STATE:FIELD=VALUE"),
    ("proc=0", "name it OPERATOR:STATE:FIELD"),
    ("nope:accState:f1=0", "OLD has no operator with uid, operator id or name 'nope'"),
    ("lk-proc:accState:f1=0", "--initial lk-proc:accState:f1: not a field NEW adds to a partly compatible state"),
])
def test_remap_initial_values_name_a_field_new_adds(tmp_path, initial, message):
    out = tmp_path / "out"
    result = statectl("remap", str(LONG), str(out), "--against", str(LONG), "--initial", initial)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not out.exists()
