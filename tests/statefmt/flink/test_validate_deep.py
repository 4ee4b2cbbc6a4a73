"""`validate --deep` decodes every stream and file: it finds a damaged byte that sizes cannot
show (Flink keeps no checksums) in a canonical stream, a RocksDB SST file and a snappy
stream, one line each, and passes every undamaged savepoint the suite reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import flink_job
from support.flink_metadata_edits import compress_keyed
from statectl.statefmt.flink.savepoint import open_flink_savepoint

FIXTURES = Path(__file__).parents[2] / "fixtures"
LONG = FIXTURES / "flink-dev" / "long-hashmap-canonical" / "savepoint"
NATIVE = FIXTURES / "flink-dev" / "long-rocksdb-native" / "savepoint"
PROC_STREAM = "bc780fd0-df7b-44c3-82d9-5de05e45083a"


def report(cli, path, *flags):
    result = cli("validate", "--json", *flags, str(path))
    return result.returncode, json.loads(result.stdout)


def copy(src: Path, tmp_path: Path) -> Path:
    target = tmp_path / "sp"
    shutil.copytree(src, target)
    return target


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("flink-dev/*/savepoint")) +
                         sorted(p for p in FIXTURES.glob("flink-sql-probe/*") if p.is_dir()),
                         ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_every_undamaged_fixture_passes(cli, path):
    code, doc = report(cli, path, "--deep")
    assert code == 0, doc["problems"]
    assert any(n.startswith("deep: ") for n in doc["notes"])


def test_the_sql_job_savepoints_pass(cli):
    for snap in flink_job.make_sql_snapshots("2.3.0"):
        code, doc = report(cli, snap.path, "--deep")
        assert code == 0, doc["problems"]


def test_a_flipped_byte_in_a_canonical_stream(cli, tmp_path):
    sp = copy(LONG, tmp_path)
    handle = open_flink_savepoint(sp).operator("lk-proc").keyed_splits[0].handle
    first = next(o for o in handle.offsets if o)
    data = bytearray((sp / PROC_STREAM).read_bytes())
    data[first] ^= 0x40  # the key group's first state id
    (sp / PROC_STREAM).write_bytes(bytes(data))
    assert report(cli, sp)[0] == 0  # sizes and header: nothing to see
    code, doc = report(cli, sp, "--deep")
    assert code == 1
    assert doc["problems"] == [f"operator lk-proc: {sp}/{PROC_STREAM}: unknown state id 16392 in key group 3 "
                               f"at offset {first}"]


def test_a_flipped_byte_in_an_sst_file(cli, tmp_path):
    sp = copy(NATIVE, tmp_path)
    fsp = open_flink_savepoint(sp)
    handle = fsp.operator("lk-proc").keyed_splits[0].handle
    sst = sp / next(s.relative_path for local, s in handle.files if local.endswith(".sst"))
    data = bytearray(sst.read_bytes())
    data[10] ^= 0x01  # inside the first data block
    sst.write_bytes(bytes(data))
    assert report(cli, sp)[0] == 0
    code, doc = report(cli, sp, "--deep")
    assert code == 1 and len(doc["problems"]) == 1
    assert str(sst) in doc["problems"][0] and "checksum" in doc["problems"][0]
    assert fsp is not None


def test_a_flipped_byte_in_a_snappy_stream(cli, tmp_path):
    sp = copy(LONG, tmp_path)
    plain = open_flink_savepoint(LONG)
    meta = (sp / "_metadata").read_bytes()
    for split in plain.operator("lk-proc").keyed_splits:
        meta = compress_keyed(sp, meta, split.handle)
    (sp / "_metadata").write_bytes(meta)
    assert report(cli, sp, "--deep")[0] == 0
    data = bytearray((sp / PROC_STREAM).read_bytes())
    data[-20] ^= 0x01  # inside the last key group's compressed chunk
    (sp / PROC_STREAM).write_bytes(bytes(data))
    code, doc = report(cli, sp, "--deep")
    assert code == 1 and len(doc["problems"]) == 1
    assert doc["problems"][0].startswith(f"operator lk-proc: {sp}/{PROC_STREAM} key group ")
