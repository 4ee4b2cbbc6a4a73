"""The suite's production-shaped Flink job (tests/flink: mode=production), run by Flink 2.3 (Kryo 5)
and 1.20 (Kryo 2) on hashmap and RocksDB, read by statectl and compared value for value with the
job's own model (expected.json): Kryo values in a POJO (UUID, Optional, an interface with a
registered and an unregistered implementation) and a Kryo-serialized final class, read with the
job's compiled classes; a legacy-Kafka-consumer-like union state with a Kryo field; CEP's NFA state,
shared buffer and timers; a session window; an interval join; the FileSource's reader splits and
enumerator state; the FileSink writer's buckets and committer's pending files. Without the classes
the Kryo states are bytes and `info` says they decode with --classes; `read --classes` decodes one.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import statectl
from support import flink_job
from support.cli_runner import statectl as run

KNOBS = dict(mode="production", keys=18, partitions=3, events=480, seed=4711)
SHAPES = {
    "2.3.0": [("hashmap", "canonical"), ("rocksdb", "native")],
    "1.20.3": [("hashmap", "canonical"), ("rocksdb", "native")],
}
CASES = [(v, b, f) for v, shapes in SHAPES.items() for b, f in shapes]
IDS = [f"{v}-{b}-{f}" for v, b, f in CASES]
COMMITTER, COMMITTER_STATE = "Sink Committer: file-sink", "streaming_committer_raw_states"
_made: dict = {}


def snapshot(version: str, backend: str, fmt: str) -> flink_job.Snapshot:
    """The version's production savepoints, all its shapes made in one JVM (cached)."""
    if version not in _made:
        snaps = flink_job.make_snapshots(version, [dict(KNOBS, backend=b, format=f) for b, f in SHAPES[version]])
        _made[version] = dict(zip(SHAPES[version], snaps))
    return _made[version][(backend, fmt)]


@pytest.fixture(params=CASES, ids=IDS)
def case(request):
    version, backend, fmt = request.param
    snap = snapshot(version, backend, fmt)
    return snap, flink_job.compile_job(version)


@pytest.fixture
def with_classes(case):
    snap, classes = case
    statectl.use_job_classes([str(classes)])
    yield snap
    statectl.use_job_classes([])


def op_id(uid: str) -> str:
    return flink_job.operator_id(uid)["operator_id"]


def ops(snap) -> dict:
    return snap.expected["operators"]


def open_(snap):
    return statectl.open_savepoint(str(snap.path))


# --- keyed state ------------------------------------------------------------------------------

def test_kryo_states_match_the_model(with_classes):
    snap = with_classes
    want = ops(snap)["kryo-proc"]["keyed_state"]
    rows = open_(snap).keyed("kryo-proc").to_pylist()
    got_profiles, got_devices, got_logins = {}, {}, {}
    for r in rows:
        p = r["profile"]
        attribution = json.loads(p["attribution"])
        got_profiles[r["key"]] = {
            "sessionId": p["sessionId"], "eventCount": p["eventCount"], "totalAmount": p["totalAmount"],
            "lastType": p["lastType"],
            # an Optional POJO field: Kryo<Optional> without a type argument, so JSON (empty: null)
            "lastCoupon": None if p["lastCoupon"] is None else json.loads(p["lastCoupon"]),
            "attribution": attribution}
        got_devices[r["key"]] = r["device"]
        got_logins[r["key"]] = r["logins"]
    profiles = want["profile"]["values"]
    assert got_profiles == {k: {
        "sessionId": v["sessionId"], "eventCount": v["eventCount"], "totalAmount": v["totalAmount"],
        "lastType": v["lastType"], "lastCoupon": v["lastCoupon"],
        "attribution": {"@class": v["attribution"]["class"],
                        **{f: x for f, x in v["attribution"].items() if f not in ("class", "kryo_class_form")}}}
        for k, v in profiles.items()}
    assert got_devices == want["device"]["values"]
    assert got_logins == want["logins"]["values"]
    # both implementations of the interface field and both coupon forms occur
    assert {v["attribution"]["kryo_class_form"] for v in profiles.values()} == {"registration id", "class name"}
    assert {v["lastCoupon_present"] for v in profiles.values()} == {True, False}


def test_legacy_consumer_offsets_match_the_model(with_classes):
    snap = with_classes
    want = ops(snap)["legacy-offsets"]["operator_state"]["topic-partition-offset-states"]["subtasks"]
    got = open_(snap).union_state("legacy-offsets", "topic-partition-offset-states").to_pylist()
    assert sorted([r["value"]["f0"]["topic"], r["value"]["f0"]["partition"], r["value"]["f1"]] for r in got) == \
        sorted(e for sub in want.values() for e in sub)


def test_cep_partial_matches_shared_buffer_and_timers_match_the_model(case):
    snap, _ = case
    want = ops(snap)["cep"]
    pending = want["pending_partial_matches"]["values"]
    sp = open_(snap)
    rows = {r["key"]: r for r in sp.keyed("cep").to_pylist()}
    got = {k: sorted(m["start_timestamp"] for m in r["nfaStateName"]["partial_matches"] if m["start_event"] is not None)
           for k, r in rows.items() if r["nfaStateName"] is not None}
    assert got == pending and pending
    for key, carts in pending.items():
        r = rows[key]
        for m in r["nfaStateName"]["partial_matches"]:
            if m["start_event"] is not None:
                assert m["state_name"] == "pay" and m["previous_entry"]["page_name"] == "cart"
                assert m["start_event"]["timestamp"] == m["start_timestamp"] == m["previous_timestamp"]
        assert r["nfaStateName"]["completed_matches"] == []
        events = r["sharedBuffer-events"]
        assert sorted(k["timestamp"] for k, _ in events) == carts
        for k, v in events:
            e = v["element"]
            assert (e["type"], e["ts"], e["user"], v["ref_count"]) == ("cart", k["timestamp"], key, 1)
        assert sorted(n["event_id"]["timestamp"] for n, _ in r["sharedBuffer-entries-with-lockable-edges"]) == carts
    # every event was at or before the watermark: no element queue; no events counter left
    assert all(r["eventQueuesStateName"] is None and r["sharedBuffer-events-count"] is None for r in rows.values())
    got_timers = sorted((t["key"], t["timestamp"], t["domain"], t["service"]) for t in sp.timers("cep").to_pylist())
    assert got_timers == sorted((t["key"], t["timestamp"], "event", "watermark-callbacks")
                                for t in want["timers"]["event_time"]["values"])


def test_session_windows_match_the_model(case):
    snap, _ = case
    want = ops(snap)["session-win"]
    sessions = want["open_sessions"]["values"]
    sp = open_(snap)
    rows = sp.keyed("session-win").to_pylist()
    contents = {r["key"]: (list(struct.unpack(">qq", r["namespace"])),
                           [[e["type"], e["ts"], e["amount"]] for e in r["window-contents"]])
                for r in rows if r["window-contents"] is not None}
    assert contents == {k: (s["state_window"], s["contents"]) for k, s in sessions.items()} and sessions
    merges = {r["key"]: [[[w["f0"]["start"], w["f0"]["end"]], [w["f1"]["start"], w["f1"]["end"]]]
                         for w in r["merging-window-set"]]
              for r in rows if r["merging-window-set"] is not None}
    assert merges == {k: [[s["session_window"], s["state_window"]]] for k, s in sessions.items()}
    got = sorted((t["key"], [t["namespace"]["start"], t["namespace"]["end"]], t["timestamp"])
                 for t in sp.timers("session-win").to_pylist())
    assert got == sorted((t["key"], t["window"], t["timestamp"]) for t in want["timers"]["event_time"]["values"])


def test_interval_join_buffers_and_timers_match_the_model(case):
    snap, _ = case
    want = ops(snap)["interval-join"]
    sp = open_(snap)
    rows = sp.keyed("interval-join").to_pylist()
    for side, kind in (("LEFT_BUFFER", "cart"), ("RIGHT_BUFFER", "pay")):
        got = {r["key"]: sorted([e["element"]["ts"], e["element"]["amount"]] for _, es in r[side] for e in es)
               for r in rows if r[side]}
        assert got == want["keyed_state"][side]["values"]
        for r in rows:
            for ts, entries in r[side] or []:
                assert [(e["element"]["ts"], e["element"]["type"], e["has_been_joined"]) for e in entries] == \
                    [(ts, kind, False)]
    got = sorted((t["key"], t["timestamp"], t["service"]) for t in sp.timers("interval-join").to_pylist())
    assert got == sorted((t["key"], t["timestamp"], "CLEANUP_TIMER") for t in want["timers"]["event_time"]["values"])


# --- connector state --------------------------------------------------------------------------

def test_file_source_splits_and_enumerator_match_the_model(case):
    snap, _ = case
    want = ops(snap)["file-source"]
    sp = open_(snap)
    assert sp.operator_state("file-source", "SourceReaderState").to_pylist() == want["reader_splits"] == []
    got = [r["value"] for r in sp.operator_state("file-source", "coordinator").to_pylist()]
    input_dir = Path(snap.expected["input_dir"]).as_uri().replace("file:///", "file:/")
    assert sorted(v["path"] for v in got) == sorted(f"{input_dir}/{f}" for f in want["coordinator"]["processed_paths"])
    assert {(v["version"], v["entry"], v["split_id"]) for v in got} == {(1, "processed path", None)}


def test_file_sink_writer_and_committer_match_the_model(case):
    snap, _ = case
    buckets = ops(snap)["file-sink"]["buckets"]["values"]
    sp = open_(snap)
    out = Path(snap.expected["sink_dir"])
    writer = [r["value"] for r in sp.operator_state("file-sink", "writer_raw_states").to_pylist()]
    assert {v["bucket_id"]: v["resumable_offset"] for v in writer} == \
        {b: w["in_progress_size"] for b, w in buckets.items() if w["in_progress_size"] is not None}
    for v in writer:
        assert v["bucket_path"] == f"file:{out}/{v['bucket_id']}"
        assert v["in_progress_path"] == "file:" + v["resumable_target"]
        assert v["resumable_target"].startswith(f"{out}/{v['bucket_id']}/part-")
    # the committer's uid is Flink's, derived from the sink's; Flink 1.x's _metadata stores no uids
    assert [op["operator_id"] for op in info_json(snap)["operators"]
            if any(s["name"] == COMMITTER_STATE for s in op["states"])] == [op_id(COMMITTER)]
    pending = [r["value"] for r in sp.operator_state(COMMITTER, COMMITTER_STATE).to_pylist()]
    got: dict = {}
    for v in pending:
        got.setdefault(v["bucket_id"], []).append(v["pending_size"])
        assert v["pending_path"] == "file:" + v["commit_target"] and v["pending_size"] == v["commit_offset"]
        assert v["request_state"] == "RECEIVED"
        # Flink 1.x's subtask entry (list version 1) also counts the drained committables
        assert v["subtask_drained"] == (0 if snap.expected["flink_version"].startswith("1.") else None)
    assert {b: sorted(s) for b, s in got.items()} == \
        {b: sorted(w["pending_part_sizes"]) for b, w in buckets.items() if w["pending_part_sizes"]}


# --- every state, info, the CLI, Spark -----------------------------------------------------------

STATES = {
    "legacy-offsets": {"topic-partition-offset-states"},
    "kryo-proc": {"profile", "device", "logins"},
    "cep": {"nfaStateName", "sharedBuffer-events", "sharedBuffer-entries-with-lockable-edges",
            "sharedBuffer-events-count", "eventQueuesStateName"},
    "session-win": {"window-contents", "merging-window-set"},
    "interval-join": {"LEFT_BUFFER", "RIGHT_BUFFER"},
    "file-source": {"SourceReaderState", "coordinator"},
    "file-sink": {"writer_raw_states"},
    COMMITTER: {COMMITTER_STATE},
}


def test_info_lists_every_state_typed_with_the_classes(case):
    snap, classes = case
    got = {op["operator_id"]: {s["name"]: s for s in op["states"]}
           for op in info_json(snap, "--classes", str(classes))["operators"] if op["states"]}
    assert {k: set(v) for k, v in got.items()} == {op_id(uid): names for uid, names in STATES.items()}
    for states in got.values():
        for s in states.values():
            assert "note" not in s and s["type"] != "binary"
            assert not s["type"].startswith("struct<version: int32, bytes:")  # a layout, not raw frames


# --- without the classes ----------------------------------------------------------------------

def info_json(snap, *args) -> dict:
    out = run("info", str(snap.path), "--json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_without_classes_kryo_states_are_bytes_and_info_says_why(case):
    snap, _ = case
    t = open_(snap).keyed("kryo-proc")
    assert str(t.schema.field("device").type) == "struct<class: string, bytes: binary>"
    assert {r["device"]["class"] for r in t.to_pylist() if r["device"]} == {"flinkjob.Production$DeviceInfo"}
    states = {s["name"]: s for op in info_json(snap)["operators"] if op["operator_id"] == op_id("kryo-proc")
              for s in op["states"]}
    assert states["device"]["type"] == "struct<class: string, bytes: binary>"
    assert states["device"]["note"] == ("Kryo, type flinkjob.Production$DeviceInfo: no layout for "
                                        "flinkjob.Production$DeviceInfo (decodes with --classes)")
    assert "field attribution: Kryo, type flinkjob.Production$Attribution" in states["profile"]["note"]
    assert "decodes with --classes" in states["profile"]["note"]
    assert "note" not in states["logins"]
    union = open_(snap).union_state("legacy-offsets", "topic-partition-offset-states")
    assert str(union.schema.field("value").type) == "binary" and union.num_rows == 3
    [offsets] = [s for op in info_json(snap)["operators"] if op["operator_id"] == op_id("legacy-offsets")
                 for s in op["states"]]
    assert offsets["note"] == ("holds Kryo, type flinkjob.Production$TopicPartitionLike: no layout for "
                               "flinkjob.Production$TopicPartitionLike (decodes with --classes)")


def test_cli_reads_a_kryo_state_with_classes(case):
    snap, classes = case
    out = run("read", str(snap.path), "--uid", "kryo-proc", "--state", "device", "--classes", str(classes),
              "--format", "jsonl", "--engine", "local")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert {r["key"]: r["device"] for r in rows} == ops(snap)["kryo-proc"]["keyed_state"]["device"]["values"]


def test_spark_reads_the_kryo_state_as_the_local_engine(spark, with_classes):
    snap = with_classes
    local = sorted(open_(snap).keyed("kryo-proc").to_pylist(), key=lambda r: r["key"])
    df = statectl.open_savepoint(str(snap.path), spark=spark).keyed("kryo-proc")
    remote = sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["key"])
    assert remote == local and len(local) == len(ops(snap)["kryo-proc"]["keyed_state"]["profile"]["values"])


def test_sql_reads_kryo_fields_with_classes(case):
    snap, classes = case
    view = "kryo-proc" if snap.expected["flink_version"].startswith("2.") else op_id("kryo-proc")  # 1.x: no uids
    query = (f"SELECT key, device.model AS model, profile.sessionId AS session, profile.attribution AS attribution "
             f"FROM `{view}` ORDER BY key")
    out = run("sql", str(snap.path), query, "--classes", str(classes), "-f", "jsonl")
    assert out.returncode == 0, out.stderr
    want = ops(snap)["kryo-proc"]["keyed_state"]
    got = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert [(r["key"], r["model"], r["session"], json.loads(r["attribution"])["@class"]) for r in got] == \
        [(k, (want["device"]["values"][k] or {}).get("model"), p["sessionId"], p["attribution"]["class"])
         for k, p in sorted(want["profile"]["values"].items())]
