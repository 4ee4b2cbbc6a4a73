"""`--overwrite` between every pair of savepoint families and layouts: statectl's canonical and
RocksDB, Flink's canonical and native (RocksDB). A self-contained `modify` of each writes a
savepoint whose data files live in the output; written over a copy of each, it leaves exactly
the new savepoint's files, `_metadata` and a file no savepoint named, and none of the old one's."""

from __future__ import annotations

import shutil

import pytest

from statectl.statefmt import formats
from statectl.statefmt.fs import Location
from support.builders import build_full_savepoint, build_native_savepoint
from support.cli_runner import statectl
from support.flink_job import FIXTURES

FOREIGN = "someone-elses-file"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    work = tmp_path_factory.mktemp("families")
    own = build_full_savepoint(work / "own-canonical")
    build_native_savepoint(own, str(work / "own-rocksdb"))
    return {"own-canonical": work / "own-canonical", "own-rocksdb": work / "own-rocksdb",
            "flink-canonical": FIXTURES / "long-rocksdb-canonical" / "savepoint",
            "flink-native": FIXTURES / "long-rocksdb-native" / "savepoint"}


def _files(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("new", ["own-canonical", "own-rocksdb", "flink-canonical", "flink-native"])
@pytest.mark.parametrize("old", ["own-canonical", "own-rocksdb", "flink-canonical", "flink-native"])
def test_an_overwrite_leaves_exactly_the_new_savepoints_files(sources, tmp_path, old, new):
    out = tmp_path / "out"
    shutil.copytree(sources[old], out)
    old_files = formats.previous_files(Location.of(str(out)))
    assert any((out / p).exists() for p in old_files)
    (out / FOREIGN).write_bytes(b"not a savepoint's")

    refused = statectl("modify", str(sources[new]), str(out), "--self-contained")
    assert refused.returncode == 1 and (out / "_metadata").exists()
    assert _files(out) >= {p for p in old_files if (sources[old] / p).exists()}  # refused: nothing removed

    result = statectl("modify", str(sources[new]), str(out), "--self-contained", "--overwrite")
    assert result.returncode == 0, result.stderr
    named = formats.previous_files(Location.of(str(out)))  # with the lineage record a copy may have
    data = {p for p in named if not p.startswith("_statectl_lineage")}
    assert data and all((out / p).is_file() for p in data)  # self-contained: every data file is here
    assert _files(out) == {p for p in named if (out / p).exists()} | {"_metadata", FOREIGN}
    assert statectl("validate", "--deep", str(out)).returncode == 0
    same = statectl("diff", "--content-only", str(sources[new]), str(out))
    assert same.returncode == 0, same.stdout
