"""Savepoint content never reaches outside the savepoint (invariant 4): lineage locations,
data-file paths and symlinks all go through one reference check (statefmt/refs.py)."""

from __future__ import annotations

import os
import re
import shutil
import socket

import pytest

from statectl.statefmt.errors import UnsafeReferenceError
from statectl.statefmt.fs import Location
from statectl.statefmt.refs import check_lineage_location
from statectl.statefmt.resolve import resolve_reference
from statectl.statefmt.formats import load
from statectl.statefmt.locations import file_location
from statectl.statefmt.validate import validate

from support.cli_runner import statectl
from support.untrusted_helpers import assert_one_error_line, base_and_derived, edit_metadata, snapshot


def _set_lineage(location: str):
    def change(doc):
        doc["lineage"][0]["location"] = location
    return change


@pytest.mark.parametrize("location, why", [
    ("/etc", "does not hold savepoint"),
    ("file:///etc", "does not hold savepoint"),
    ("../../../../etc", "is not absolute"),
    ("etc", "is not absolute"),
    ("/tmp/../etc", "may not contain '.', '..' or empty components"),
    ("s3://bucket/sp?endpoint_override=127.0.0.1:9&scheme=http", "is not on the savepoint's own filesystem (local)"),
    ("hdfs://namenode/sp", "is not on the savepoint's own filesystem (local)"),
])
def test_a_hostile_lineage_location_is_refused_by_every_command(tmp_path, location, why):
    base, derived = base_and_derived(tmp_path)
    edit_metadata(derived, _set_lineage(location))
    before = snapshot(base, derived)
    for args in (["info", str(derived)],
                 ["modify", str(derived), str(tmp_path / "out"), "--self-contained"]):
        line = assert_one_error_line(statectl(*args), "operator ", repr(location), why)
        assert line.startswith("error: ") and "lineage location" in line
    assert not (tmp_path / "out" / "_metadata").exists()
    report = validate(str(derived))
    assert not report.valid and len(report.problems) == 1 and why in report.problems[0]
    assert report.files_checked == 0
    assert snapshot(base, derived) == before


def test_the_lineage_location_never_opens_a_host_the_file_names(tmp_path):
    """An s3 location with endpoint_override in `_metadata` sends no request anywhere."""
    base, derived = base_and_derived(tmp_path)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    edit_metadata(derived, _set_lineage(
        f"s3://bucket/sp?endpoint_override=127.0.0.1:{port}&scheme=http"))
    for args in (["info", str(derived)], ["validate", str(derived)],
                 ["modify", str(derived), str(tmp_path / "out"), "--self-contained"]):
        assert statectl(*args).returncode != 0
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


def test_modify_self_contained_never_copies_a_file_from_outside(tmp_path):
    """The lineage names a directory holding a `passwd` where a savepoint's file would be."""
    base, derived = base_and_derived(tmp_path)
    fake = tmp_path / "etc"
    fake.mkdir()
    (fake / "passwd").write_text("root:x:0:0\n")
    edit_metadata(derived, _set_lineage(str(fake)))
    result = statectl("modify", str(derived), str(tmp_path / "out"), "--self-contained")
    assert_one_error_line(result, f"lineage location {str(fake)!r} does not hold savepoint")
    assert not (tmp_path / "out").exists() or not any(
        p.name.startswith("passwd") for p in (tmp_path / "out").rglob("*"))


def test_a_data_file_symlinked_out_of_the_savepoint_is_refused(tmp_path):
    """The symlink's target has the very bytes `_metadata` expects: only the symlink is wrong."""
    base, derived = base_and_derived(tmp_path)
    sp = load(str(base))
    op, f = next((op, f) for op, f in sp.data_files() if op.uid == "src")
    inside = base / f.ref.path
    outside = tmp_path / "elsewhere.parquet"
    shutil.copy(inside, outside)
    inside.unlink()
    os.symlink(outside, inside)
    with pytest.raises(UnsafeReferenceError, match=r"^operator src: file reference '.*' leads "
                                                   r"out of the savepoint \(a symlink\)$"):
        file_location(load(str(base)), f.ref)
    report = validate(str(base))
    assert report.problems == [
        f"operator src: file reference {f.ref.path!r} leads out of the savepoint (a symlink)"]
    result = statectl("modify", str(derived), str(tmp_path / "out"), "--self-contained")
    assert_one_error_line(result, "operator src: file reference", "leads out of the savepoint")


def test_a_symlink_inside_the_savepoint_is_followed(tmp_path):
    base, _ = base_and_derived(tmp_path)
    sp = load(str(base))
    _, f = next(iter(sp.data_files()))
    target = base / "moved.parquet"
    (base / f.ref.path).rename(target)
    os.symlink(target, base / f.ref.path)
    assert file_location(sp, f.ref).uri == str(base / f.ref.path)
    assert validate(str(base)).valid


def test_resolve_reference_for_absolute_handles(tmp_path):
    """The one check Flink's absolute file handles go through."""
    sp = tmp_path / "sp"
    (sp / "shared").mkdir(parents=True)
    (sp / "shared" / "a.sst").write_bytes(b"x")
    other = tmp_path / "other"
    other.mkdir()
    assert resolve_reference(str(sp), str(sp / "shared" / "a.sst")) == Location(str(sp / "shared/a.sst"))
    assert resolve_reference(str(sp), "shared/a.sst") == Location(str(sp / "shared/a.sst"))
    assert resolve_reference(str(sp), f"file://{sp}/shared/a.sst") == Location(str(sp / "shared/a.sst"))
    assert resolve_reference(str(sp), str(other / "b"), [str(other)]) == Location(str(other / "b"))
    cases = {
        str(other / "b"): "lies outside the savepoint",
        "/etc/passwd": "lies outside the savepoint",
        f"{sp}/../other/b": "may not contain '.' or '..' components",
        "s3://bucket/x": "is not on the savepoint's filesystem",
        "../x": "may not contain empty, '.' or '..' components",
    }
    for reference, why in cases.items():
        with pytest.raises(UnsafeReferenceError) as e:
            resolve_reference(str(sp), reference, where="operator proc")
        assert str(e.value).startswith(f"operator proc: ") and why in str(e.value), str(e.value)
    with pytest.raises(UnsafeReferenceError, match="carries filesystem options"):
        resolve_reference("s3://bucket/sp", "s3://bucket/sp/x?endpoint_override=evil")


def test_lineage_locations_take_the_users_own_filesystem_options():
    assert check_lineage_location("s3://bucket/base", "s3://bucket/sp?region=eu-west-1", "lineage") \
        == "s3://bucket/base?region=eu-west-1"
    assert check_lineage_location("/data/base/", "/data/sp", "lineage") == "/data/base"
    for bad, why in [("s3://user:pw@bucket/base", "carries credentials"),
                     ("s3://bucket/base#x", "carries filesystem options"),
                     ("s3:///base", "names no bucket or host"),
                     ("gs://bucket/base", "is not on the savepoint's own filesystem (s3)")]:
        with pytest.raises(UnsafeReferenceError, match=re.escape(why)):
            check_lineage_location(bad, "s3://bucket/sp", "lineage")


# --- structural invariants: validate checks the rows against the operator ------------------

def _edit_operator(sp, uid, **changes):
    def change(doc):
        op = next(o for o in doc["operators"] if o["uid"] == uid)
        op.update(changes)
    return change


def test_validate_catches_an_edited_max_parallelism(tmp_path):
    """proc is written at max parallelism 16: its rows' key groups are hash mod 16."""
    from support.untrusted_helpers import edit_metadata

    sp = tmp_path / "sp"
    from support.builders import build_full_savepoint
    build_full_savepoint(sp)
    assert validate(str(sp)).valid
    edit_metadata(sp, _edit_operator(sp, "proc", max_parallelism=17))
    report = validate(str(sp))
    assert not report.valid
    assert all(p.startswith("operator proc: ") and "(was the max parallelism changed without "
               "rescaling?)" in p and "at max parallelism 17" in p for p in report.problems)
    assert len(report.problems) == len(load(str(sp)).operator("proc").keyed.files) + \
        len(load(str(sp)).operator("proc").keyed.timers)
    result = statectl("validate", str(sp))
    assert result.returncode == 1 and "invalid" in result.stdout


def test_validate_catches_an_edited_parallelism_of_operator_state(tmp_path):
    from support.builders import build_full_savepoint
    from support.untrusted_helpers import edit_metadata

    sp = tmp_path / "sp"
    build_full_savepoint(sp)
    edit_metadata(sp, _edit_operator(sp, "src", parallelism=1))
    problems = validate(str(sp)).problems
    assert len(problems) == 2  # offsets and members hold subtask 1; broadcast has no subtasks
    assert all(p.startswith("operator src: ") and p.endswith(
        "holds entries of subtask 1, but the operator runs at parallelism 1 (was the parallelism "
        "changed without rescaling?)") for p in problems)


def test_a_new_parallelism_of_keyed_state_alone_is_a_valid_metadata_only_rescale(tmp_path):
    from support.builders import build_full_savepoint
    from support.untrusted_helpers import edit_metadata

    sp = tmp_path / "sp"
    build_full_savepoint(sp)  # proc: parallelism 3, max parallelism 16
    edit_metadata(sp, _edit_operator(sp, "proc", parallelism=2))
    assert validate(str(sp)).valid
