"""`statectl modify` on Flink savepoints: metadata only, untouched state as shallow pointer copies
(absolute file handles into the base, lineage beside `_metadata`), `--self-contained` copies, the
base never written. Restores by a real Flink: tests/writers/test_flink_modify_restore.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from statectl.statefmt.flink import handles as H
from statectl.statefmt.flink.lineage import flink_savepoint_id, lineage_file_name
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, operator_state_table
from statectl.statefmt.flink.shallow import streams
from statectl.statefmt.ids import operator_id_for_uid
from statectl.writers import SavepointWriter
from support.cli_runner import error_line
from support.cli_runner import statectl_process
from support.cli_runner import statectl
from support.flink_expect import FIXTURES
from support.flink_shapes import INCREMENTAL, SHAPES
from support.flink_metadata_edits import older
from support.savepoint_rows import digest

LONG = FIXTURES / "long-hashmap-canonical" / "savepoint"  # inline streams and relative files
MIXED = FIXTURES / "long-rocksdb-canonical" / "savepoint"  # one file, the rest inline
NATIVE = FIXTURES / "long-rocksdb-native" / "savepoint"  # incremental RocksDB handles
PROC_ID = "f8737d0002449596536ac00c0c6d98fe"  # lk-proc


def copy_of(source: Path, tmp_path: Path, name: str = "base") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def modify(*args: str) -> dict:
    result = statectl("modify", *map(str, args), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def metadata(sp: Path):
    return parse_metadata((sp / "_metadata").read_bytes())


def by_id(meta) -> dict:
    return {op.operator_id: op for op in meta.operators}


def tables(sp: Path, label: str) -> dict:
    """Every table of one operator, read without Spark, as Python values."""
    op = open_flink_savepoint(sp).operator(label)
    out = {}
    if op.keyed_schema is not None:
        out["keyed"] = keyed_table(op).sort_by([(c, "ascending") for c in ("_key_group", "key")]).to_pylist()
    for name in op.operator_states:
        out[name] = operator_state_table(op, name).to_pylist()
    return out


@pytest.mark.parametrize("fixture", [LONG, MIXED], ids=["files", "inline"])
def test_rename_and_remove_write_pointers_into_the_base(tmp_path, fixture):
    base = copy_of(fixture, tmp_path)
    before = digest(base)
    out = tmp_path / "out"
    doc = modify(base, out, "--rename", "lk-proc=p-proc", "--remove", "lk-snk")
    base_id = flink_savepoint_id((base / "_metadata").read_bytes())
    out_id = flink_savepoint_id((out / "_metadata").read_bytes())
    assert doc["savepoint_id"] == out_id
    assert doc["removed"] == ["lk-snk"]
    assert doc["lineage"] == [{"savepoint_id": base_id, "location": str(base)}]
    assert {o["uid"]: o["action"] for o in doc["operators"]} == {
        "p-proc": "renamed", "lk-rules-src": "shallow copy", "lk-union-op": "shallow copy",
        "lk-win": "shallow copy", "lk-src": "shallow copy", "lk-bcast": "shallow copy"}
    assert sorted(p.name for p in out.iterdir()) == ["_metadata", lineage_file_name(out_id)]
    assert json.loads((out / lineage_file_name(out_id)).read_text()) == {
        "format": "statectl-flink-lineage", "format_version": 1, "savepoint_id": out_id,
        "lineage": [{"savepoint_id": base_id, "location": str(base)}]}

    old, new = metadata(base), metadata(out)
    assert (new.version, new.checkpoint_id, new.trailer) == (old.version, old.checkpoint_id, old.trailer)
    new_ops = by_id(new)
    renamed = new_ops.pop(operator_id_for_uid("p-proc"))
    assert (renamed.uid, renamed.name) == ("p-proc", "lk-proc")
    pairs = [(o, renamed if o.operator_id == PROC_ID else new_ops[o.operator_id])
             for o in old.operators if o.uid != "lk-snk"]
    assert len(pairs) == 6
    kinds = set()  # of the base's handles
    for a, b in pairs:
        for s, t in zip(streams(a), streams(b), strict=True):
            kinds.add(type(s).__name__)
            if isinstance(s, H.RelativeFile):
                assert t == H.AbsoluteFile(f"file:{base}/{s.relative_path}", s.size)
            else:
                assert t == s  # inline streams stay inline
        assert (b.parallelism, b.max_parallelism, len(b.subtasks)) == \
            (a.parallelism, a.max_parallelism, len(a.subtasks))
    assert kinds == ({"RelativeFile"} if fixture == LONG else {"RelativeFile", "InlineStream"})
    assert tables(out, "p-proc") == tables(base, "lk-proc")
    assert tables(out, "lk-bcast") == tables(base, "lk-bcast")
    assert digest(base) == before


def test_a_uid_for_an_operator_known_only_by_id(tmp_path):
    """Flink 1.x `_metadata` (version 4) holds no uids: `--rename <id>=NEW` gives it NEW's id."""
    base = tmp_path / "v4"
    base.mkdir()
    for f in LONG.iterdir():
        shutil.copy(f, base / f.name)
    (base / "_metadata").write_bytes(older((LONG / "_metadata").read_bytes(), 4))
    before = digest(base)
    doc = modify(base, tmp_path / "out", "--rename", f"{PROC_ID}=proc")
    assert {(o["uid"], o["operator_id"], o["action"]) for o in doc["operators"] if o["action"] == "renamed"} == \
        {(None, operator_id_for_uid("proc"), "renamed")}
    new = metadata(tmp_path / "out")
    assert new.version == 4 and PROC_ID not in by_id(new)
    assert tables(tmp_path / "out", operator_id_for_uid("proc")) == tables(base, PROC_ID)
    # the operator is now reachable by its uid, as a job declaring uid "proc" restores it
    read = statectl("read", str(tmp_path / "out"), "--uid", "proc", "-f", "jsonl", "--limit", "1")
    assert read.returncode == 0, read.stderr
    assert digest(base) == before


@pytest.mark.slow
def test_validate_lists_the_base_and_names_what_is_gone(tmp_path):
    base = copy_of(LONG, tmp_path)
    out = tmp_path / "out"
    modify(base, out, "--remove", "lk-win")
    base_id = flink_savepoint_id((base / "_metadata").read_bytes())
    files = sum(1 for p in base.iterdir() if p.name != "_metadata") - 3  # lk-win's three files removed
    report = statectl("validate", str(out))
    assert report.returncode == 0, report.stderr
    assert report.stdout.splitlines()[0] == \
        f"depends on savepoint {base_id} at {base}: present, {files} file(s) referenced"
    doc = json.loads(statectl("validate", "--json", str(out)).stdout)
    assert doc["dependencies"] == [{"savepoint_id": base_id, "location": str(base), "files": files,
                                    "missing_files": 0, "present": True}]

    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    out.rename(moved)  # a shallow copy can move: it names the base's files by absolute path
    assert statectl("validate", str(moved)).returncode == 0

    # after a file or the base is gone: a process of its own (this one keeps opened savepoints)
    proc_file = next(f for f in open_flink_savepoint(base).operator("lk-proc").files)
    Path(proc_file.path).rename(tmp_path / "aside")
    bad = statectl_process("validate", "--json", str(moved))
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["problems"] == [f"operator lk-proc: {proc_file.path}: file is missing"]
    (tmp_path / "aside").rename(proc_file.path)

    shutil.rmtree(base)
    gone = f"{moved}: savepoint {base_id} at {base}, which this one references, is gone"
    assert json.loads(statectl_process("validate", "--json", str(moved)).stdout)["problems"] == [gone]
    assert error_line(statectl_process("info", str(moved)), moved) == f"error: SP: savepoint {base_id} at {base}, " \
        "which this one references, is gone"


def test_self_contained_copies_every_file(tmp_path):
    base = copy_of(NATIVE, tmp_path)
    before = digest(base)
    expected = {label: tables(base, label) for label in ("lk-proc", "lk-union-op")}
    out = tmp_path / "out"
    doc = modify(base, out, "--rename", "lk-proc=proc", "--self-contained")
    files = [p for p in base.iterdir() if p.name != "_metadata"]
    assert doc["lineage"] == []
    assert (doc["copied_files"], doc["copied_bytes"]) == (len(files), sum(p.stat().st_size for p in files))
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == len(files) + 1 and not any(n.startswith("_statectl_lineage") for n in names)
    new = metadata(out)
    handles = [s for op in new.operators for s in streams(op)]
    assert {type(s) for s in handles} <= {H.RelativeFile, H.InlineStream}
    assert any(isinstance(s, H.IncrementalRocksDB) for op in new.operators for st in op.subtasks
               for s in (st.managed_keyed,))
    assert digest(base) == before
    shutil.rmtree(base)
    assert statectl_process("validate", str(out)).returncode == 0
    assert tables(out, "proc") == expected["lk-proc"]
    assert tables(out, "lk-union-op") == expected["lk-union-op"]


def test_a_copy_of_a_copy_keeps_the_lineage_flat(tmp_path):
    base = copy_of(LONG, tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    modify(base, first, "--rename", "lk-proc=a")
    doc = modify(first, second, "--rename", "a=b", "--remove", "lk-src")
    base_id = flink_savepoint_id((base / "_metadata").read_bytes())
    assert doc["lineage"] == [{"savepoint_id": base_id, "location": str(base)}]
    shutil.rmtree(first)  # the middle one holds no file the second needs
    assert statectl_process("validate", str(second)).returncode == 0
    assert tables(second, "b") == tables(base, "lk-proc")


def test_native_snapshot_and_retained_checkpoint(flink_snapshots, tmp_path):
    """RocksDB native: many files per subtask, all made absolute. A retained incremental
    checkpoint: its absolute shared/ handles stay as they are, its private files are pointed at."""
    native, checkpoint = flink_snapshots("2.3.0", [SHAPES["rocksdb-native"], INCREMENTAL])
    base = copy_of(native.path, tmp_path)
    modify(base, tmp_path / "n", "--rename", "proc=p-proc")
    n_files = [s for op in metadata(tmp_path / "n").operators for s in streams(op)]
    assert len(n_files) > 20 and all(isinstance(s, H.AbsoluteFile) and s.path.startswith(f"file:{base}/")
                                     for s in n_files)

    chk = checkpoint.path
    before = digest(chk.parent)
    doc = modify(chk, tmp_path / "c", "--rename", "proc=p-proc", "--rename", "win=p-win")
    chk_id = flink_savepoint_id((chk / "_metadata").read_bytes())
    assert doc["lineage"] == [{"savepoint_id": chk_id, "location": str(chk)}]
    old, new = metadata(chk), metadata(tmp_path / "c")
    old_handles = [s for op in old.operators for s in streams(op)]
    new_handles = [s for op in new.operators for s in streams(op)]
    shared = [s for s in old_handles if isinstance(s, H.AbsoluteFile)]
    assert shared and all("/shared/" in s.path for s in shared)
    assert sorted(map(repr, shared)) == sorted(repr(s) for s in new_handles if isinstance(s, H.AbsoluteFile)
                                               and "/shared/" in s.path)
    assert not any(isinstance(s, H.RelativeFile) for s in new_handles)
    report = json.loads(statectl("validate", "--json", str(tmp_path / "c")).stdout)
    assert report["problems"] == []
    assert report["dependencies"][0]["files"] == len({s.path for s in new_handles if isinstance(s, H.AbsoluteFile)})
    assert tables(tmp_path / "c", "p-proc") == tables(chk, "proc")
    assert digest(chk.parent) == before


def test_refusals_leave_nothing(tmp_path):
    base = copy_of(NATIVE, tmp_path)
    before = digest(base)
    out = tmp_path / "out"
    assert error_line(statectl("modify", str(base), str(out), "--rename", "lk-proc=lk-win"), base) == \
        f"error: two operators of the output would have the operator id {operator_id_for_uid('lk-win')} " \
        "(uid 'lk-win')"
    assert error_line(statectl("modify", str(base), str(out), "--remove", "nope"), base).startswith(
        "error: no operator with uid 'nope'; operators: ")
    assert error_line(statectl("modify", str(base), str(base / "inside")), base) == \
        "error: output SP/inside is inside the savepoint SP, which this command reads; choose an output outside it"
    assert not out.exists()
    # a file of the base gone: the self-contained copy fails and leaves no savepoint and no file
    sst = next(p for p in base.iterdir() if p.name != "_metadata" and p.stat().st_size > 1000)
    sst.rename(tmp_path / "aside")
    result = statectl("modify", str(base), str(out), "--self-contained")
    assert error_line(result, base) == f"error: SP/{sst.name}: file is missing"
    assert not out.exists() or list(out.rglob("*")) == []
    (tmp_path / "aside").rename(sst)
    assert digest(base) == before


def test_overwrite(tmp_path):
    base = copy_of(LONG, tmp_path)
    out = tmp_path / "out"
    modify(base, out, "--self-contained")
    copies = sorted(p.name for p in out.iterdir())
    assert len(copies) == 16
    assert error_line(statectl("modify", str(base), str(out)), out) == \
        "error: SP already holds a savepoint; choose a new output or pass --overwrite"
    doc = modify(base, out, "--remove", "lk-win", "--overwrite")
    assert sorted(p.name for p in out.iterdir()) == ["_metadata", lineage_file_name(doc["savepoint_id"])]
    doc = modify(base, out, "--overwrite")  # one shallow copy replaces another: its lineage file too
    assert sorted(p.name for p in out.iterdir()) == ["_metadata", lineage_file_name(doc["savepoint_id"])]
    assert statectl("validate", str(out)).returncode == 0


def test_python_api(tmp_path):
    base = copy_of(LONG, tmp_path)
    report = (SavepointWriter.from_existing(str(base)).rename_operator("lk-proc", "proc")
              .remove_operator("lk-snk").write(str(tmp_path / "out")))
    assert [o.uid for o in report.savepoint.operators] == \
        ["proc", "lk-rules-src", "lk-union-op", "lk-win", "lk-src", "lk-bcast"]
    assert report.removed == ["lk-snk"]
    assert report.savepoint.lineage[0].location == str(base)


@pytest.mark.slow
def test_diff_of_a_renamed_copy(spark, tmp_path):
    """`statectl diff` matches the renamed operator by its files and finds its content equal."""
    from statectl.readers.diff import diff_savepoints
    from statectl.statefmt.formats import load

    base = copy_of(LONG, tmp_path)
    modify(base, tmp_path / "out", "--rename", "lk-proc=proc")
    d = diff_savepoints(spark, load(base), load(tmp_path / "out"))
    assert d.operators_renamed == (("lk-proc", "proc", "same files"),)
    assert (d.operators_added, d.operators_removed, d.changes) == ((), (), ())
    assert all((t.only_in_a, t.only_in_b, t.changed) == (0, 0, 0) for t in d.tables)
    assert len(d.tables) >= 7


@pytest.mark.slow
def test_a_lineage_file_cannot_open_other_folders(tmp_path):
    """The lineage file is untrusted content: its locations pass the own format's checks, and only
    they widen where the absolute handles of `_metadata` may point."""
    base = copy_of(LONG, tmp_path)
    out = tmp_path / "out"
    doc = modify(base, out, "--rename", "lk-proc=p")
    lineage = out / lineage_file_name(doc["savepoint_id"])
    entry = json.loads(lineage.read_text())

    def with_location(location: str) -> str:
        lineage.write_text(json.dumps({**entry, "lineage": [{**entry["lineage"][0], "location": location}]}))
        return error_line(statectl_process("info", str(out)), out)

    where = f"error: SP/{lineage.name}: lineage[0]: lineage location"
    assert with_location("base") == f"{where} 'base' is not absolute"
    assert with_location(f"{base}/../base") == \
        f"{where} '{base}/../base' may not contain '.', '..' or empty components"
    other = copy_of(MIXED, tmp_path, "other")  # a savepoint, but not the one the entry names
    assert with_location(str(other)) == f"{where} '{other}' does not hold savepoint {entry['lineage'][0]['savepoint_id']}"
    lineage.unlink()  # without its lineage, the handles into the base lie outside the savepoint
    line = error_line(statectl_process("info", str(out)), out)
    assert line.startswith(f"error: SP/_metadata: file handle: file reference '{base}/")
    assert line.endswith("' lies outside the savepoint")
