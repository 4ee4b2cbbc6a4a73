"""Nothing statectl creates outlives the command or the backend's close(), also on errors.

The commands run in this process against the suite's Spark session, with
``tempfile.tempdir`` pointed at a fresh folder; Spark's Python workers put their
scratch folders below the executor's local directories, checked too (see
temp_folders.py). The example job's killed runs are checked in test_example_job.py,
the cluster's driver and executors in test_cluster.py.
"""

from __future__ import annotations

import gc
import shutil
import tempfile

import pytest

from support import REPO

from support.cli_runner import statectl, statectl_process
from support.temp_folders import spark_scratch_dirs, statectl_entries
from statectl.backends import RocksDBBackend
from statectl.backends.base import Subtask
from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import Field, KeyedStateDescriptor

SPEC = str(REPO / "examples" / "spec.yaml")
FLINK_NATIVE = str(REPO / "tests" / "fixtures" / "flink-dev" / "long-rocksdb-native" / "savepoint")


@pytest.fixture
def fresh_tmp(tmp_path, monkeypatch, spark):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert statectl_entries(folder, *spark_scratch_dirs(spark)) == []
    assert list(folder.iterdir()) == []


def ok(result) -> str:
    assert result.returncode == 0, (result.args, result.stderr)
    return result.stdout


@pytest.mark.slow
def test_commands_leave_no_temporary_folder(fresh_tmp, tmp_path):
    canonical, native = str(tmp_path / "canonical"), str(tmp_path / "native")
    ok(statectl("bootstrap", "--spec", SPEC, canonical, "--json"))
    ok(statectl("bootstrap", "--spec", SPEC, native, "--format", "rocksdb", "--json"))
    assert len(ok(statectl("read", native, "--uid", "proc", "-f", "jsonl")).splitlines()) == 20
    # a scan stopped after one row: the task's RocksDB copy goes with it
    assert len(ok(statectl("read", native, "--uid", "proc", "--limit", "1", "-f", "jsonl"))
               .splitlines()) == 1
    ok(statectl("rescale", native, str(tmp_path / "rescaled"), "--max-parallelism", "32", "--json"))
    ok(statectl("read", FLINK_NATIVE, "--uid", "lk-proc", "-f", "jsonl"))


@pytest.mark.slow
def test_a_query_naming_no_view_leaves_no_spark_warehouse(fresh_tmp, tmp_path):
    """Spark's analysis asks its session catalog for an unknown name, which makes the
    warehouse folder: it is a temporary one, never one in the working directory."""
    sp = tmp_path / "sp"
    ok(statectl("bootstrap", "--spec", SPEC, str(sp), "--json"))
    work = tmp_path / "work"
    work.mkdir()
    failed = statectl_process("sql", str(sp), "SELECT * FROM nope", cwd=work)
    assert failed.returncode == 1 and failed.stderr.startswith("error: query failed: ")
    assert list(work.iterdir()) == []


@pytest.mark.slow
def test_a_spark_command_returns_after_its_jvm_removed_its_folders(tmp_path):
    """Spark's JVM keeps its block manager, artifacts and work folders in ``java.io.tmpdir`` and
    removes them on its way out: the command returns only after its JVM did."""
    jvm_tmp = tmp_path / "jvm-tmp"
    jvm_tmp.mkdir()
    result = statectl_process("read", FLINK_NATIVE, "--uid", "lk-proc", "--engine", "spark", "--limit", "1",
                              "-f", "jsonl", env={"JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={jvm_tmp}",
                                                                 "STATECTL_ENGINE": "classic"})  # its own JVM
    assert len(ok(result).splitlines()) == 1 and result.stderr == ""
    assert sorted(p.name for p in jvm_tmp.iterdir()) == []


def test_a_failing_read_leaves_no_temporary_folder(fresh_tmp, tmp_path):
    native = tmp_path / "native"
    ok(statectl("bootstrap", "--spec", SPEC, str(native), "--format", "rocksdb", "--json"))
    sst = next(p for p in sorted(native.rglob("*")) if p.is_file() and p.suffix == ".sst")
    sst.write_bytes(sst.read_bytes()[:-10])
    failed = statectl("read", str(native), "--uid", "proc", "-f", "jsonl")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("error: ") and len(failed.stderr.splitlines()) == 1


def _backend(**options) -> RocksDBBackend:
    return RocksDBBackend.create("op", subtask=0, parallelism=1, max_parallelism=8,
                                 key=[("user", "string")], **options)


def test_backends_leave_no_temporary_folder(fresh_tmp):
    backend = _backend()
    assert backend.workdir.startswith(str(fresh_tmp / "statectl-rocksdb-"))
    backend.value_state("count", "int64")
    backend.close()
    with pytest.raises(RuntimeError, match="^in use$"):
        with _backend() as failing:
            failing.set_current_key("u1")
            failing.value_state("count", "int64").update(3)
            raise RuntimeError("in use")
    # a construction that fails after its database was opened: a state named like the key
    subtask = Subtask(operator_id_for_uid("op"), "op", 0, 1, 8)
    with pytest.raises(UsageError, match="state name 'user' is taken"):
        RocksDBBackend(subtask, [Field("user", "string")],
                       states=[KeyedStateDescriptor("user", "value", "int64")])
    forgotten = _backend()  # never closed: removed when dropped
    forgotten.value_state("count", "int64")
    del forgotten
    gc.collect()


def test_a_given_workdir_is_the_callers(fresh_tmp, tmp_path):
    workdir = tmp_path / "work"
    with _backend(workdir=workdir) as backend:
        assert backend.db_path == str(workdir / "db")
    assert (workdir / "db").is_dir()  # kept: the caller's folder
    shutil.rmtree(workdir)
