"""The `_metadata` codec: exact round trips and a clear refusal of every malformed input."""

from __future__ import annotations

import dataclasses
import json

import pytest

from support.builders import build_full_savepoint
from statectl.statefmt.errors import (
    LimitError,
    MetadataError,
    NotASavepointError,
    SavepointExistsError,
    UnknownOperatorError,
    UnsafeReferenceError,
    UnsupportedVersionError,
    UsageError,
)
from statectl.statefmt.ids import OperatorRef, operator_id_for_uid
from statectl.statefmt.metadata import decode, encode
from statectl.statefmt.model import DataFile, FileRef, LineageEntry
from statectl.statefmt.refs import check_relative_path
from statectl.statefmt.formats import load
from statectl.statefmt.formats import commit
from statectl.statefmt.savepoint import prune_lineage, shallow_copy


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return build_full_savepoint(tmp_path_factory.mktemp("meta") / "sp")


def test_encode_decode_round_trip(full):
    again = decode(encode(full))
    assert again == full
    assert encode(again) == encode(full)
    assert json.loads(encode(full))["format_version"] == 1


def test_load_knows_its_location(full):
    assert load(full.location).location == full.location


def _mutate(full, change) -> bytes:
    doc = json.loads(encode(full))
    change(doc)
    return json.dumps(doc).encode()


def _first_file(doc):
    return doc["operators"][0]["keyed"]["files"][0]


@pytest.mark.parametrize("change, error, message", [
    (lambda d: d.update(format_version=2), UnsupportedVersionError,
     "format version 2 is not supported; this statectl reads version 1"),
    (lambda d: d.pop("format_version"), UnsupportedVersionError, "format version None"),
    (lambda d: d.update(format="other"), MetadataError, "not a statectl _metadata file"),
    (lambda d: d.pop("operators"), MetadataError, "savepoint.operators is missing"),
    (lambda d: d["operators"][0].update(parallelism="2"), MetadataError, "parallelism has the wrong type"),
    (lambda d: d["operators"][0].update(parallelism=17), LimitError, "parallelism must be between 1"),
    (lambda d: d["operators"][0].update(max_parallelism=40000), LimitError, "max parallelism"),
    (lambda d: d["operators"][0].update(uid="other"), MetadataError, "does not match uid 'other'"),
    (lambda d: d["operators"][0].update(format="parquet2"), MetadataError, "physical format 'parquet2'"),
    (lambda d: d["operators"][1].update(operator_id=d["operators"][0]["operator_id"], uid=None),
     MetadataError, "same operator id"),
    (lambda d: _first_file(d).update(path="../../etc/passwd"), UnsafeReferenceError, "'..'"),
    (lambda d: _first_file(d).update(path="/etc/passwd"), UnsafeReferenceError, "not a plain relative path"),
    (lambda d: _first_file(d).update(path="s3://bucket/x"), UnsafeReferenceError, "not a plain relative path"),
    (lambda d: _first_file(d).update(savepoint="nope"), MetadataError, "not in the lineage"),
    (lambda d: _first_file(d).update(checksum="md5:abc"), MetadataError, "checksum must be"),
    (lambda d: _first_file(d).update(key_groups=[0, 16]), MetadataError, "key_groups must be"),
    (lambda d: _first_file(d).update(size=-1), MetadataError, "cannot be negative"),
    (lambda d: d["operators"][0]["keyed"]["states"][0].update(kind="set"), MetadataError, "kind must be one of"),
    (lambda d: d["operators"][0]["keyed"]["states"][0].update(name="user"), MetadataError, "distinct names"),
    (lambda d: d["operators"][0]["keyed"]["key"][0].update(type="float64"), Exception, "cannot be a key"),
    (lambda d: d["operators"][0]["keyed"]["states"][0].update(value_type="uint8"), MetadataError, "unknown type"),
    (lambda d: d["operators"][1]["operator_states"][2].pop("key_type"), MetadataError, "key_type is required"),
])
def test_malformed_metadata_is_refused_with_the_reason(full, change, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        decode(_mutate(full, change), source="/x/_metadata")
    assert str(info.value).startswith("/x/_metadata: ")


def test_overlapping_key_group_ranges_are_refused(full):
    def overlap(d):
        files = d["operators"][0]["keyed"]["files"]
        files.append(dict(files[0], path=files[0]["path"] + ".2"))
    with pytest.raises(MetadataError, match="overlap"):
        decode(_mutate(full, overlap))


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe", b"[]", b'{"format": "statectl-savepoint"'])
def test_garbage_is_not_a_metadata_file(data):
    with pytest.raises(MetadataError, match="not a statectl _metadata file"):
        decode(data)


@pytest.mark.parametrize("path", ["a/../b", "./a", "a//b", "", "a\\b", "c:/x", "a/\x00"])
def test_unsafe_relative_paths(path):
    with pytest.raises(UnsafeReferenceError):
        check_relative_path(path)


def test_missing_and_unfinished_savepoints(tmp_path):
    with pytest.raises(NotASavepointError, match="no such savepoint directory"):
        load(str(tmp_path / "absent"))
    (tmp_path / "half").mkdir()
    with pytest.raises(NotASavepointError, match="no _metadata file"):
        load(str(tmp_path / "half"))


def test_commit_refuses_to_overwrite_a_savepoint(full):
    before = open(full.location + "/_metadata", "rb").read()
    with pytest.raises(SavepointExistsError, match="already holds a savepoint"):
        commit(full, full.location)
    assert open(full.location + "/_metadata", "rb").read() == before


def test_shallow_copy_points_at_the_base_and_records_lineage(full, tmp_path):
    proc = full.operator("proc")
    copied, lineage = shallow_copy(full, proc)
    assert lineage == [LineageEntry(full.savepoint_id, full.location)]
    for before, after in zip(proc.data_files(), copied.data_files()):
        assert after.ref == FileRef(before.ref.path, full.savepoint_id)
        assert (after.size, after.checksum) == (before.size, before.checksum)
    derived = full.replace(savepoint_id="d", operators=(copied,), lineage=tuple(lineage))
    derived = commit(derived, tmp_path / "derived")
    again = load(derived.location)
    assert again.lineage == (LineageEntry(full.savepoint_id, full.location),)
    # A copy of the copy still points at the original files, not at the middle savepoint.
    copied2, lineage2 = shallow_copy(again, again.operator("proc"))
    assert lineage2 == [LineageEntry(full.savepoint_id, full.location)]
    assert all(f.ref.savepoint == full.savepoint_id for f in copied2.data_files())
    assert prune_lineage(again.replace(operators=())).lineage == ()


def test_file_references_into_another_savepoint_need_a_lineage_entry():
    f = DataFile(FileRef("a/b.parquet", "elsewhere"), 1, "sha256:" + "0" * 64, 1)
    assert f.ref.is_shared


def test_file_uris_work_like_paths(full):
    from statectl.statefmt.validate import validate

    uri = "file://" + full.location
    sp = load(uri)
    assert sp.location == uri and sp == full
    report = validate(uri)
    assert report.valid and report.files_checked == len(list(full.data_files()))


def test_operators_are_named_by_uid_else_by_an_id_present(full):
    proc_id = operator_id_for_uid("proc")
    hidden = dataclasses.replace(full.operator("src"), uid=None)
    sp = dataclasses.replace(full, operators=(full.operator("proc"), hidden))
    assert sp.operator("proc").operator_id == proc_id
    assert sp.operator(proc_id.upper()).uid == "proc"  # an id string reaches a named operator too
    assert sp.operator(hidden.operator_id) is hidden
    assert sp.operator(OperatorRef(operator_id=hidden.operator_id)) is hidden
    assert sp.operator("src") is hidden  # a uid names the operator whose id it hashes to
    with pytest.raises(UnknownOperatorError) as e:
        sp.operator("nope")
    assert str(e.value) == f"no operator with uid 'nope'; operators: proc, {hidden.operator_id} (no uid)"
    with pytest.raises(UnknownOperatorError, match=f"^no operator with uid '{'0' * 32}'; "):
        sp.operator("0" * 32)
    with pytest.raises(UsageError, match="^name an operator by uid"):
        sp.operator(7)
