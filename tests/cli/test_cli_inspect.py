"""`statectl info` and `statectl validate`, through the console script's entry point (no Spark)."""

from __future__ import annotations

import json
import shutil

import pytest

from support.builders import build_full_savepoint
from support.cli_runner import statectl
from statectl.statefmt.formats import load
from statectl.statefmt.formats import commit
from statectl.statefmt.savepoint import shallow_copy


@pytest.fixture
def savepoint(tmp_path):
    return build_full_savepoint(tmp_path / "sp")


def _first_keyed_file(sp):
    return sp.location + "/" + sp.operator("proc").keyed.files[0].ref.path


def _assert_clean_failure(result, *fragments):
    assert result.returncode == 1, result
    text = result.stdout + result.stderr
    assert "Traceback" not in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def test_info_json_lists_operators_states_and_sizes(savepoint):
    result = statectl("info", savepoint.location, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    ops = {o["uid"]: o for o in doc["operators"]}
    assert set(ops) == {"proc", "src"}
    assert ops["proc"]["operator_id"] == "576dd1d1f766474368806deb544ded87"
    assert (ops["proc"]["parallelism"], ops["proc"]["max_parallelism"]) == (3, 16)
    assert [(s["name"], s["kind"]) for s in ops["src"]["states"]] == [
        ("offsets", "list"), ("members", "union"), ("rules", "broadcast")]
    assert ("attrs", "map", "map<string, list<string>>") in [
        (s["name"], s["kind"], s["type"]) for s in ops["proc"]["states"]]
    files = list(savepoint.operator("proc").data_files())
    assert ops["proc"]["files"] == len(files)
    assert ops["proc"]["bytes"] == sum(f.size for f in files)
    assert doc["shared_files"] == [] and doc["lineage"] == []


def test_info_table_and_validate_on_a_good_savepoint(savepoint):
    info = statectl("info", savepoint.location)
    assert info.returncode == 0
    for text in ("proc", "src", "576dd1d1f766474368806deb544ded87", "map<string, list<string>>",
                 "operator broadcast", "timers"):
        assert text in info.stdout
    valid = statectl("validate", savepoint.location)
    assert valid.returncode == 0
    assert "valid" in valid.stdout and "problem" not in valid.stdout


def test_validate_lists_every_problem_naming_each_file(savepoint):
    keyed = savepoint.operator("proc").keyed.files
    truncated = savepoint.location + "/" + keyed[0].ref.path
    flipped = savepoint.location + "/" + keyed[1].ref.path
    missing = savepoint.location + "/" + savepoint.operator("src").operator_states[0].files[0].ref.path
    with open(truncated, "r+b") as f:
        f.truncate(keyed[0].size - 10)
    with open(flipped, "r+b") as f:
        f.seek(keyed[1].size // 2)
        byte = f.read(1)
        f.seek(keyed[1].size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    shutil.os.remove(missing)
    result = statectl("validate", savepoint.location, "--json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["valid"] is False
    problems = "\n".join(doc["problems"])
    assert len(doc["problems"]) == 3
    assert f"{truncated}: size is {keyed[0].size - 10} bytes, _metadata records {keyed[0].size}" in problems
    assert f"{flipped}: checksum mismatch" in problems
    assert f"{missing}: file is missing" in problems
    text = statectl("validate", savepoint.location)
    _assert_clean_failure(text, "invalid", "checksum mismatch")


@pytest.mark.parametrize("damage, message", [
    (lambda m: m.replace('"format_version": 1', '"format_version": 9'),
     "format version 9 is not supported"),
    (lambda m: m[: len(m) // 2], "not a statectl _metadata file"),
    (lambda m: m.replace('"path": "576dd1d1', '"path": "../../576dd1d1', 1), "may not contain empty, '.' or '..'"),
])
def test_bad_metadata_fails_validate_and_info_clearly(savepoint, damage, message):
    meta = savepoint.location + "/_metadata"
    text = open(meta, encoding="utf-8").read()
    open(meta, "w", encoding="utf-8").write(damage(text))
    for command in ("validate", "info"):
        result = statectl(command, savepoint.location)
        _assert_clean_failure(result, message, meta)


def test_not_a_savepoint_and_usage_errors(tmp_path):
    _assert_clean_failure(statectl("info", str(tmp_path)), "no _metadata file")
    _assert_clean_failure(statectl("validate", str(tmp_path / "nope")), "no such savepoint directory")
    assert statectl("info").returncode == 2
    assert statectl("frobnicate").returncode == 2


def test_debug_shows_the_traceback(tmp_path):
    result = statectl("--debug", "info", str(tmp_path))
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_derived_savepoint_lists_dependencies_and_fails_when_the_base_is_gone(savepoint, tmp_path):
    copied, lineage = shallow_copy(savepoint, savepoint.operator("proc"))
    derived = commit(savepoint.replace(savepoint_id="derived-1", operators=(copied,),
                                       lineage=tuple(lineage)), tmp_path / "derived")
    info = json.loads(statectl("info", derived.location, "--json").stdout)
    assert info["lineage"] == [{"savepoint_id": savepoint.savepoint_id, "location": savepoint.location}]
    assert len(info["shared_files"]) == len(list(copied.data_files()))
    assert all(f["location"].startswith(savepoint.location + "/") for f in info["shared_files"])
    ok = json.loads(statectl("validate", derived.location, "--json").stdout)
    assert ok["valid"] and ok["dependencies"][0]["present"] is True
    assert ok["dependencies"][0]["files"] == len(list(copied.data_files()))
    shutil.rmtree(savepoint.location)
    gone = statectl("validate", derived.location)
    _assert_clean_failure(gone, f"savepoint {savepoint.savepoint_id} at {savepoint.location}",
                          "is gone")
    assert load(derived.location).operator("proc")  # the metadata itself is intact
