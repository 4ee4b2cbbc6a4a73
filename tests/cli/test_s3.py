"""Savepoints on S3: every command against a real S3-compatible store on loopback (SeaweedFS,
started by the suite), reached as a user reaches S3, with `s3://` locations and the endpoint
and credentials in the usual `AWS_*` variables. A command whose Spark tasks reach the store
(`diff`, `sql`, a Spark write) runs as a process of its own, so that Spark's Python workers start
with the variables; the others (`info`, `validate`, `ls`, `modify`, reads by the local engine)
run in this process with the variables set for the test: pyarrow reads them when the command
builds its S3 filesystem (statectl keeps one per location and S3 settings: a run with other
credentials or another endpoint gets its own, as a process would).

What S3 shows must be what the same savepoint shows on a local disk: the same `info`, the same
rows through the local engine and through `sql`, `diff --engine spark` (which reads both copies
in Spark's tasks) finds them identical; writes put on the store exactly the objects the command says.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from support.cli_runner import statectl, statectl_in_process, statectl_process
from support.explore_driver import browse_everything, run_explorer
from support.s3_store import start_s3_store
from statectl.statefmt.flink import handles as H
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.metadata_write import encode_metadata
from statectl.statefmt.flink.shallow import map_streams

pytestmark = pytest.mark.slow  # an S3 server, and a statectl process per Spark command

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FLINK_NATIVE = REPO / "tests" / "fixtures" / "flink-dev" / "long-rocksdb-native" / "savepoint"
INCREMENTAL = dict(checkpoint="incremental", backend="rocksdb", key_type="long", max_parallelism=256,
                   parallelism=3, inline_threshold=0)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    store = start_s3_store(tmp_path_factory.mktemp("s3-store"))
    yield store
    store.stop()


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """statectl's own canonical savepoint of the README's example, on the local disk."""
    out = tmp_path_factory.mktemp("own") / "sp"
    done = statectl("bootstrap", "--spec", str(EXAMPLES / "spec.yaml"), str(out))
    assert done.returncode == 0, done.stderr
    return out


def ok(run, *args):
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def on_s3(s3, monkeypatch):
    """Runs commands that start no Spark task in this process, the store's variables set."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    return statectl_in_process


def spark_on_s3(s3):
    """Runs a command whose Spark tasks reach the store: a process, its workers given the variables."""
    return lambda *args: statectl_process(*args, env=s3.env)


def info_without_location(text: str) -> dict:
    """`info --json` less what names the copy: its location, and for Flink the time, which is
    its `_metadata`'s modification time."""
    doc = json.loads(text)
    doc.pop("location")
    if doc["savepoint_id"].startswith("flink-"):
        doc.pop("created_at")
    return doc


def pointer_copy_objects(s3, key: str) -> list[str]:
    """The objects of a Flink pointer copy: its `_metadata`, and the lineage file naming its base."""
    objects = s3.keys(key)
    assert objects[0] == "_metadata" and len(objects) == 2 and objects[1].startswith("_statectl_lineage-flink-")
    return objects


def rows(run, sp, *args) -> list[dict]:
    out = ok(run, "read", str(sp), *args, "--format", "jsonl")
    return sorted((json.loads(line) for line in out.splitlines()), key=json.dumps)


def test_own_savepoint_on_s3_reads_as_on_disk(s3, own, on_s3):
    remote, local = s3.upload(own, "own/example"), str(own)
    run = on_s3
    assert info_without_location(ok(run, "info", "--json", remote)) == \
        info_without_location(ok(statectl, "info", "--json", local))
    assert ok(run, "validate", remote).startswith(f"valid: {remote} ")
    expected = rows(statectl, local, "--uid", "proc")
    assert expected and rows(run, remote, "--uid", "proc", "--engine", "local") == expected
    # Spark reads the Parquet files through pyarrow in its tasks (no S3A jars in PySpark): diff
    # --engine spark reads every table of both copies in Spark and finds the same rows
    assert ok(spark_on_s3(s3), "diff", remote, local, "--content-only", "--engine", "spark") \
        .strip().endswith("identical")


def test_writes_to_s3_put_only_their_own_objects(s3, own, on_s3):
    base = s3.upload(own, "own/base")
    run = on_s3
    base_objects = s3.keys("own/base")

    ok(spark_on_s3(s3), "bootstrap", "--spec", str(EXAMPLES / "new-state.yaml"), s3.uri("own/v2"), "--base", base)
    base_id = json.loads(ok(run, "info", "--json", base))["savepoint_id"]
    depends, valid = ok(run, "validate", s3.uri("own/v2")).splitlines()
    assert depends == f"depends on savepoint {base_id} at {base}: present, 9 file(s) referenced"
    assert valid.startswith(f"valid: {s3.uri('own/v2')} (12 file(s), ")
    doc = json.loads(ok(run, "info", "--json", s3.uri("own/v2")))
    assert [d["location"] for d in doc["lineage"]] == [base]
    assert rows(run, s3.uri("own/v2"), "--uid", "proc", "--engine", "local") == rows(statectl, own, "--uid", "proc")

    ok(run, "modify", s3.uri("own/v2"), s3.uri("own/v3"), "--self-contained")
    assert json.loads(ok(run, "info", "--json", s3.uri("own/v3")))["lineage"] == []
    assert s3.keys("own/base") == base_objects  # the base is only ever read
    for key in ("own/v2", "own/v3"):
        assert "_metadata" in s3.keys(key) and not [k for k in s3.keys(key) if ".tmp" in k or "_staging" in k]


def test_flink_savepoint_on_s3(s3, on_s3):
    remote = s3.upload(FLINK_NATIVE, "flink/native")
    run = on_s3
    assert info_without_location(ok(run, "info", "--json", remote)) == \
        info_without_location(ok(statectl, "info", "--json", str(FLINK_NATIVE)))
    assert ok(run, "validate", remote).splitlines()[-1].startswith(f"valid: {remote} ")
    expected = rows(statectl, FLINK_NATIVE, "--uid", "lk-proc")
    assert expected and rows(run, remote, "--uid", "lk-proc") == expected
    query = "SELECT count(*) AS n FROM `lk-proc`"  # Spark's tasks copy the SST files from the store
    assert ok(spark_on_s3(s3), "sql", remote, query, "--format", "jsonl") == \
        ok(statectl, "sql", str(FLINK_NATIVE), query, "--format", "jsonl")

    ok(run, "modify", remote, s3.uri("flink/renamed"), "--rename", "lk-proc=p")
    pointer_copy_objects(s3, "flink/renamed")  # a pointer copy: no data file of its own
    assert rows(run, s3.uri("flink/renamed"), "--uid", "p") == expected
    ok(run, "modify", remote, s3.uri("flink/own-copy"), "--self-contained")
    assert len(s3.keys("flink/own-copy")) == len(s3.keys("flink/native"))
    assert rows(run, s3.uri("flink/own-copy"), "--uid", "lk-proc") == expected
    listed = json.loads(ok(run, "ls", s3.uri("flink"), "--json"))
    assert sorted(s["location"] for s in listed["snapshots"]) == \
        [s3.uri("flink/native"), s3.uri("flink/own-copy"), s3.uri("flink/renamed")]


def test_explore_browses_a_savepoint_on_s3(s3, on_s3):
    """`statectl explore s3://...`: every operator, state and first value opens as on the local
    disk, and the store holds the same objects afterwards."""
    remote = s3.upload(FLINK_NATIVE, "explore/native")
    objects = s3.keys("explore/native")
    on_disk = run_explorer(str(FLINK_NATIVE), browse_everything)
    assert run_explorer(remote, browse_everything) == on_disk and len(on_disk) > 5
    assert s3.keys("explore/native") == objects


def _on_store(folder: Path, local_root: Path, remote_root: str) -> None:
    """Rewrite the absolute handles of *folder*'s `_metadata` from *local_root* to *remote_root*:
    the `_metadata` Flink writes when its checkpoint storage is that S3 folder (Flink's S3
    filesystem plugin is not in the PyPI wheel the suite's job runs from)."""
    meta = parse_metadata((folder / "_metadata").read_bytes())

    def moved(s):
        if isinstance(s, H.AbsoluteFile) and s.path.startswith(f"file:{local_root}/"):
            return dataclasses.replace(s, path=remote_root + s.path[len(f"file:{local_root}"):])
        return s

    meta = dataclasses.replace(meta, operators=tuple(map_streams(op, moved) for op in meta.operators))
    (folder / "_metadata").write_bytes(encode_metadata(meta))


def test_retained_checkpoint_with_shared_files_on_s3(s3, on_s3, flink_snapshots, tmp_path):
    (checkpoint,) = flink_snapshots("2.3.0", [INCREMENTAL])
    job = checkpoint.path.parent  # chk-N, shared/, taskowned/
    copy = tmp_path / "job"
    shutil.copytree(job, copy)
    _on_store(copy / checkpoint.path.name, job, s3.uri("job"))
    s3.upload(copy, "job")
    remote = s3.uri(f"job/{checkpoint.path.name}")
    run = on_s3

    report = json.loads(ok(run, "validate", "--json", remote))
    assert report["problems"] == [] and report["files_checked"] > 0
    shared = [k for k in s3.keys("job") if k.startswith("shared/")]
    assert shared
    for uid in ("proc", "win"):
        assert rows(run, remote, "--uid", uid) == rows(statectl, checkpoint.path, "--uid", uid)
    ok(run, "modify", remote, s3.uri("job-renamed"), "--rename", "proc=p")
    pointer_copy_objects(s3, "job-renamed")
    assert rows(run, s3.uri("job-renamed"), "--uid", "p") == rows(statectl, checkpoint.path, "--uid", "proc")


def error_line(done) -> str:
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    return line


def test_mistakes_are_one_line_and_write_nothing(s3, own, on_s3, monkeypatch):
    remote = s3.upload(own, "own/for-errors")
    before = s3.keys("own")
    assert error_line(on_s3("info", remote, env={"AWS_SECRET_ACCESS_KEY": "wrong"})) == \
        f"error: cannot read {remote}/_metadata: access denied (check the credentials in AWS_ACCESS_KEY_ID " \
        "and AWS_SECRET_ACCESS_KEY, and the bucket's policy)"
    assert error_line(on_s3("info", "s3://no-such-bucket/sp")) == \
        "error: s3://no-such-bucket/sp: no such savepoint directory"
    assert error_line(on_s3("info", remote, env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})) \
        .startswith(f"error: cannot reach the object store holding {remote}/_metadata (check AWS_ENDPOINT_URL")
    # Spark writes Parquet through Hadoop's filesystems, which have no S3A in PySpark (refused
    # before any task runs)
    done = on_s3("read", remote, "--uid", "proc", "--engine", "spark", "--format", "parquet",
                 "--output", s3.uri("out/spark"))
    assert error_line(done) == (
        f"error: {s3.uri('out/spark')}: Spark writes Parquet to s3a:// through a Hadoop filesystem this "
        "Spark does not have (for s3a: the hadoop-aws jars); write to a local path, or read with "
        "--engine local, which writes Parquet through pyarrow")
    assert s3.keys("out") == []
    ok(on_s3, "read", remote, "--uid", "proc", "--engine", "local", "--format", "parquet",
       "--output", s3.uri("out/local"))
    assert s3.keys("out/local") == ["part-00000.parquet"]
    assert s3.keys("own") == before
    # --s3-endpoint is the documented option for the endpoint
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    done = on_s3("--s3-endpoint", s3.endpoint, "info", remote)
    assert done.returncode == 0 and done.stdout.startswith(f"Savepoint {remote}"), done.stderr
