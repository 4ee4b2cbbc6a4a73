"""`bootstrap --format flink` writes canonical Flink savepoints that Flink restores.

Savepoints made by the suite's Flink job (2.3.0: String keys at max parallelism 256, Tuple2 keys
from the heap backend, Long keys; every state group incl. TTL, POJO, tuples, lists, maps; event-
and processing-time timers; the window operator; list, union and broadcast state) are read with
statectl and written back with `bootstrap --format flink` from those tables (tests/support/flink_rewrite.py),
the serializers named by each operator's `flink:` binding. The result reads back equal, key groups
included (Flink's hash), and restores in Flink 2.3 into both backends with exactly its state:
timers and windows fire as expected. Bad bindings and values are one error line, and a failed
write leaves no `_metadata` and no stream file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

from statectl.readers import open_savepoint
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.statefmt.flink.savepoint_write import CANONICAL_TRAILER
from support.cli_runner import statectl
from support.flink_rewrite import spec_from_flink_savepoint
from support.flink_shapes import HASHMAP_CANONICAL, SHAPES

sys.path.insert(0, str(Path(__file__).parents[1]))
from support import flink_job  # noqa: E402

VERSION = "2.3.0"
REWRITTEN = {
    "string-keys-maxp-256": SHAPES["rocksdb-canonical"],
    "tuple-keys-heap": SHAPES["hashmap-native"],
    "long-keys": HASHMAP_CANONICAL,
}


@pytest.fixture(scope="module")
def rewritten(spark, flink_snapshots, tmp_path_factory):
    """{shape: (the job's snapshot, the savepoint bootstrap wrote from its tables)}."""
    snaps = dict(zip(REWRITTEN, flink_snapshots(VERSION, list(REWRITTEN.values()))))
    out = {}
    for shape, snap in snaps.items():
        folder = tmp_path_factory.mktemp(shape)
        spec = spec_from_flink_savepoint(spark, snap.path, folder / "input")
        result = statectl("bootstrap", "--spec", str(spec), "--format", "flink", str(folder / "savepoint"))
        assert result.returncode == 0, result.stderr
        out[shape] = (snap, folder / "savepoint")
    return out


def _rows(df) -> list[str]:
    """Every row, TTL timestamps included (the tables carry them, so the write keeps them)."""
    return sorted(json.dumps(r.asDict(True), sort_keys=True, default=str) for r in df.collect())


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(REWRITTEN))
def test_rewritten_savepoint_reads_back_equal(spark, rewritten, shape):
    snap, written = rewritten[shape]
    meta = parse_metadata((written / "_metadata").read_bytes())
    assert (meta.version, meta.checkpoint_id, meta.trailer) == (6, 1, CANONICAL_TRAILER)
    source, mine = open_flink_savepoint(snap.path), open_flink_savepoint(written)
    a, b = open_savepoint(spark, str(snap.path)), open_savepoint(spark, str(written))
    compared = 0
    for op in source.operators:
        if op.keyed_header is not None:
            assert mine.operator(op.uid).keyed_header.key == op.keyed_header.key
            assert _rows(b.keyed(op.uid, include_key_group=True)) == _rows(a.keyed(op.uid, include_key_group=True))
            assert _rows(b.timers(op.uid, include_key_group=True)) == _rows(a.timers(op.uid, include_key_group=True))
            compared += 2
        for name in op.operator_states:
            assert _rows(b.operator_state(op.uid, name)) == _rows(a.operator_state(op.uid, name))
            compared += 1
    assert compared == 7
    ttl = b.keyed("proc").select(F.min("ttl_last_ttl_ts").alias("t")).collect()[0]["t"]
    assert ttl is not None and ttl == a.keyed("proc").select(F.min("ttl_last_ttl_ts")).collect()[0][0]


@pytest.mark.slow
def test_rewritten_savepoints_restore_in_flink_into_both_backends(rewritten):
    items = [(flink_job.Snapshot(written, snap.expected, written.parent / f"restore-{shape}"), backend)
             for shape, (snap, written) in sorted(rewritten.items()) for backend in ("hashmap", "rocksdb")]
    dumps = flink_job.restore_snapshots(VERSION, items)
    for (snap, backend), dump in zip(items, dumps):
        assert flink_job.restore_mismatches(snap.expected, dump) == [], (snap.path, backend)
        proc = dump["operators"]["proc"]
        assert sum(map(len, proc["timers"]["event_time"]["values"].values())) > 0
        assert dump["operators"]["win"]["keyed_state"]["window-contents"]["values"]


def _spec(tmp_path: Path, operators: list) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"format": "flink", "operators": operators}))
    return path


def test_bad_bindings_are_one_line_each(tmp_path):
    (tmp_path / "in.csv").write_text("user,n\na,1\n")
    spec = _spec(tmp_path, [
        {"uid": "a", "flink": {"key": "Tuple2<String>", "states": {"n": {"type": "Long", "ttl": "yes"}}},
         "keyed": {"key": "user", "input": "in.csv", "states": [{"name": "n", "kind": "value", "column": "n"}]}},
        {"uid": "b", "flink": {"namespace": "Long"},
         "keyed": {"key": "user", "input": "in.csv", "states": [{"name": "n", "kind": "value", "column": "n"}]}},
    ])
    result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "error: operator 'a'.flink.key: Tuple2 takes 2 type argument(s) in 'Tuple2<String>', got 1",
        "error: operator 'b'.flink.namespace must be VoidNamespace or TimeWindow",
    ]


def test_refusals_before_any_file_is_written(tmp_path):
    (tmp_path / "in.csv").write_text("user,n,at\na,1,2024-01-01 00:00:00\n")
    keyed = {"key": "user", "input": "in.csv", "states": [{"name": "n", "kind": "value", "column": "n"}]}
    pojo_key = {"key": {"pojo": "a.User", "fields": {"name": "String"}}}
    spec = _spec(tmp_path, [{"uid": "p", "flink": pojo_key, "keyed": keyed}])
    result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"))
    assert (result.returncode, result.stderr.strip().splitlines()) == (1, [
        "error: operator 'p': a POJO a.User key cannot be written: Flink places keys by their Java hashCode, "
        "which is known here only for String, Long, Integer, Short, Byte, Boolean, Character, Double, Float "
        "and tuples of these"])
    ts = {**keyed, "states": [{"name": "at", "kind": "value", "column": "at"}]}
    spec = _spec(tmp_path, [{"uid": "p", "keyed": ts}])
    result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"))
    assert result.stderr.strip().splitlines() == [
        "error: operator 'p', state 'at', column 'at': a timestamp[us, tz=UTC] column has no single Flink "
        "type; give its flink type (Instant, LocalDateTime or java.sql.Timestamp)"]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_failing_write_leaves_no_metadata_and_no_stream(tmp_path):
    """A value the bound serializer cannot take fails a task: the write removes every file it began."""
    (tmp_path / "in.csv").write_text("user,n\na,1\nb,x\nc,3\n")
    spec = _spec(tmp_path, [{"uid": "p", "parallelism": 2, "flink": {"states": {"n": "Integer"}},
                             "keyed": {"key": "user", "input": {"path": "in.csv", "schema": "user string, n string"},
                                       "states": [{"name": "n", "kind": "value", "column": "n"}]}}])
    result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(
        "error: operator 'p', state 'n', value: a string column does not fit a Flink int")
    assert not (tmp_path / "out").exists()  # the folder the write made, too
