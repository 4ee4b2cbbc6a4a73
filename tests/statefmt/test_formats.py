"""The format seam (`statefmt/formats.py`): a savepoint's format sniffed once from its
`_metadata`, loaded, committed and copied through the one registry."""

from __future__ import annotations

import pickle
import shutil

import pytest

from support.builders import build_full_savepoint
from support.flink_job import FIXTURES
from statectl.statefmt import formats
from statectl.statefmt.errors import SavepointExistsError
from statectl.statefmt.flink.format import FlinkCommit
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.fs import Location
from statectl.statefmt.seam import Staged
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
    staged = Staged(formats.FORMATS[Format.FLINK], FlinkCommit(data, files=frozenset(named - {dropped})))
    committed, owned = formats.commit_staged(Location.of(str(out)), staged, overwrite=True)
    assert committed.savepoint_id == formats.load(FLINK).savepoint_id
    assert owned == named - {dropped}
    assert not (out / dropped).exists()
    assert (out / "stale-file").exists()  # not named by the old savepoint: never touched
    assert all((out / p).exists() for p in named - {dropped} if not p.startswith("_statectl_lineage"))


def test_an_own_savepoint_over_a_flink_one_removes_exactly_the_flink_savepoints_files(own, tmp_path):
    """The one commit removes the files the replaced savepoint owned, whichever family it was:
    a statectl savepoint written over a Flink savepoint leaves none of the Flink one's files."""
    out = tmp_path / "sp"
    shutil.copytree(FLINK, out)
    flink_files = formats.previous_files(Location.of(str(out)))
    present = {p for p in flink_files if (out / p).exists()}
    assert present, "the Flink fixture names files in its own folder"
    (out / "someone-elses-file").write_bytes(b"x")
    for _, f in own.data_files():  # the new savepoint's data files in place, as a write leaves them
        target = out / f.ref.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Location.of(own.location).child(f.ref.path).path, target)
    with pytest.raises(SavepointExistsError):
        formats.commit(own, str(out))
    assert all((out / p).exists() for p in present)  # refused: nothing removed
    committed = formats.commit(own, str(out), overwrite=True)
    assert formats.load(str(out)) == committed
    left = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    mine = {f.ref.path for _, f in own.data_files()}
    assert left == mine | {"_metadata", "someone-elses-file"}
    assert not present & left
