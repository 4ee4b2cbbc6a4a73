"""The lineage file of a Flink shallow copy: each location it names must hold the Flink
savepoint its entry names (a shallow copy's files are Flink streams, so are its bases')."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from statectl.statefmt.errors import UnsafeReferenceError
from statectl.statefmt.flink.lineage import encode_lineage, flink_savepoint_id, read_lineage
from statectl.statefmt.fs import Location
from statectl.statefmt.model import LineageEntry

from support.readers_savepoints import build_base

FIXTURE = Path(__file__).parents[2] / "fixtures" / "flink-dev" / "long-hashmap-canonical" / "savepoint"
DERIVED_ID = "flink-" + "0" * 32


def _lineage_of(tmp_path: Path, entry: LineageEntry) -> tuple[LineageEntry, ...]:
    derived = tmp_path / "derived"
    derived.mkdir()
    (derived / f"_statectl_lineage-{DERIVED_ID}.json").write_bytes(encode_lineage(DERIVED_ID, (entry,)))
    return read_lineage(Location.of(str(derived)), DERIVED_ID)


def test_a_flink_base_is_its_lineage(tmp_path):
    base = tmp_path / "base"
    shutil.copytree(FIXTURE, base)
    entry = LineageEntry(flink_savepoint_id((base / "_metadata").read_bytes()), str(base))
    assert _lineage_of(tmp_path, entry) == (entry,)


def test_a_savepoint_of_statectls_own_format_is_not_a_flink_base(tmp_path):
    own = build_base(tmp_path / "own")
    with pytest.raises(UnsafeReferenceError) as e:
        _lineage_of(tmp_path, LineageEntry(own.savepoint_id, own.location))
    path = tmp_path / "derived" / f"_statectl_lineage-{DERIVED_ID}.json"
    assert str(e.value) == (f"{path}: lineage[0]: lineage location {own.location!r} does not hold "
                            f"savepoint {own.savepoint_id}")
