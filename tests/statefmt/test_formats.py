"""The format seam (`statefmt/formats.py`): a savepoint's format sniffed once from its
`_metadata`, loaded, committed and copied through the one registry."""

from __future__ import annotations

import pickle
import shutil

import pytest

from support.builders import build_full_savepoint
from support.flink_job import FIXTURES
from statectl.statefmt import formats
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.fs import Location
from statectl.statefmt.vocabulary import Format

FLINK = FIXTURES / "long-rocksdb-canonical" / "savepoint"


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    return build_full_savepoint(tmp_path_factory.mktemp("formats") / "sp")


def _head(location) -> bytes:
    return Location.of(str(location)).child("_metadata").read_bytes()[:4]


def test_each_family_is_sniffed_from_its_metadata(own):
    assert formats.sniff(_head(FLINK)).name == Format.FLINK
    assert formats.sniff(_head(own.location)).name == Format.CANONICAL
    assert {f.name for f in formats.FORMATS.values()} == {Format.CANONICAL, Format.ROCKSDB, Format.FLINK}
    assert all(formats.for_operator(op).name == op.format for op in own.operators)


def test_a_flink_savepoint_carries_its_description_and_pickles():
    sp = formats.load(FLINK)
    assert flink_savepoint(sp) is sp.description
    assert sp.replace(operators=()).description is sp.description
    assert sp.replace(location="/elsewhere").description is None
    again = pickle.loads(pickle.dumps(sp))
    assert again == sp and flink_savepoint(again).savepoint_id == sp.savepoint_id


def test_previous_files_name_what_each_family_keeps_in_its_folder(own):
    mine = formats.previous_files(Location.of(own.location))
    assert mine == {f.ref.path for _, f in own.data_files()}
    theirs = formats.previous_files(Location.of(str(FLINK)))
    assert theirs and all(not p.startswith("/") for p in theirs)


def test_flink_overwrite_commit_removes_only_what_the_new_savepoint_does_not_name(tmp_path):
    out = tmp_path / "sp"
    shutil.copytree(FLINK, out)
    data = (out / "_metadata").read_bytes()
    (out / "stale-file").write_bytes(b"x")
    named = formats.previous_files(Location.of(str(out)))
    dropped = sorted(p for p in named if (out / p).exists())[0]
    committed = formats.FORMATS[Format.FLINK].commit(
        Location.of(str(out)), formats.FlinkCommit(data, files=frozenset(named - {dropped})), overwrite=True)
    assert committed.savepoint_id == formats.load(FLINK).savepoint_id
    assert not (out / dropped).exists()
    assert (out / "stale-file").exists()  # not named by the old savepoint: never touched
    assert all((out / p).exists() for p in named - {dropped} if not p.startswith("_statectl_lineage"))


def test_own_operators_are_pointer_copies_only(own):
    fmt = formats.FORMATS[Format.CANONICAL]
    proc = own.operator("proc")
    copies = fmt.copy_operators(own, [proc.operator_id])
    assert [op.operator_id for op in copies.operators] == [proc.operator_id]
    assert [e.savepoint_id for e in copies.lineage] == [own.savepoint_id]
    with pytest.raises(StatectlError, match="self-contained"):
        fmt.copy_operators(own, [proc.operator_id], name_for=lambda name, taken: name)


def test_flink_operators_are_copied_by_pointer_or_self_contained():
    sp = formats.load(FLINK)
    fmt = formats.for_operator(sp.operators[0])
    ids = [op.operator_id for op in sp.operators]
    pointers = fmt.copy_operators(sp, ids)
    assert len(pointers.operators) == len(ids) and pointers.lineage and not pointers.copies
    contained = fmt.copy_operators(sp, ids, name_for=lambda name, taken: f"copy-{len(taken)}-{name}")
    assert contained.copies and not contained.lineage
