"""The state of Flink's library operators in the realworld Flink 2.3 fixtures as typed tables:
CEP's NFA state and shared buffer, the interval join's buffers, session windows, and their
timers, against the job's own model (`expected.json`); hand-made values of the older layouts;
damaged bytes and unknown snapshot versions in one line."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import pytest

import statectl
from statectl.statefmt.errors import StatectlError, UnsupportedFlinkFeature
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.serializers import COMPOSITE_MAGIC, NESTED_MAGIC, read_snapshot
from support.cli_runner import error_line, statectl as run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev"
NAMES = ("realworld-hashmap-canonical", "realworld-rocksdb-native")
CEP, JOIN, SESSION = "cep", "interval-join", "session-win"
CEP_STATES = ("nfaStateName", "sharedBuffer-events", "sharedBuffer-entries-with-lockable-edges",
              "sharedBuffer-events-count", "eventQueuesStateName")
PENDING = "keys_with_partial_matches (user -> cart event timestamps waiting for a pay)"
LEFT, RIGHT = "LEFT_BUFFER (carts) user -> [[ts, amount]]", "RIGHT_BUFFER (pays) user -> [[ts, amount]]"


def model(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text())


def keyed(path, uid: str) -> list[dict]:
    return statectl.open_savepoint(str(path)).keyed(uid).to_pylist()


def timers(path, uid: str) -> list[dict]:
    return statectl.open_savepoint(str(path)).timers(uid).to_pylist()


def savepoint(name: str) -> Path:
    return FIXTURES / name / "savepoint"


@pytest.mark.parametrize("name", NAMES)
def test_info_types_every_state_of_cep_and_the_interval_join(name):
    out = run("info", str(savepoint(name)), "--json")
    assert out.returncode == 0, out.stderr
    ops = {op["uid"]: op for op in json.loads(out.stdout)["operators"]}
    types = {(uid, s["name"]): s["type"] for uid in (CEP, JOIN) for s in ops[uid]["states"]}
    assert set(types) == {(CEP, s) for s in CEP_STATES} | {(JOIN, "LEFT_BUFFER"), (JOIN, "RIGHT_BUFFER")}
    assert "binary" not in " ".join(types.values())
    assert types[(CEP, "nfaStateName")].startswith(
        "struct<partial_matches: list<struct<state_name: string, previous_entry: struct<event_id: "
        "struct<id: int32, timestamp: int64>, page_name: string>, version: string, start_timestamp: int64, "
        "previous_timestamp: int64, start_event: struct<id: int32, timestamp: int64>>>, completed_matches:")
    assert types[(CEP, "sharedBuffer-events")].startswith(
        "map<struct<id: int32, timestamp: int64>, struct<ref_count: int32, element: struct<amount: int64")
    assert "edges: list<struct<ref_count: int32, edge: struct<target: struct<event_id:" in \
        types[(CEP, "sharedBuffer-entries-with-lockable-edges")]
    assert types[(CEP, "sharedBuffer-events-count")] == "map<int64, int32>"
    assert types[(JOIN, "LEFT_BUFFER")].startswith(
        "map<int64, list<struct<has_been_joined: bool, element: struct<amount: int64")


@pytest.mark.parametrize("name", NAMES)
def test_cep_pending_partial_matches_are_the_models(name):
    want = model(name)["operators"][CEP]["expected"][PENDING]
    rows = keyed(savepoint(name), CEP)
    pending = {r["key"]: [m for m in r["nfaStateName"]["partial_matches"] if m["start_event"] is not None]
               for r in rows}
    assert {k: sorted(m["start_timestamp"] for m in ms) for k, ms in pending.items()} == want
    for r in rows:
        nfa, carts = r["nfaStateName"], want[r["key"]]
        assert nfa["completed_matches"] == []
        for m in pending[r["key"]]:  # waiting in state "pay" after the cart that started it
            assert m["state_name"] == "pay" and re.fullmatch(r"\d+\.0", m["version"])
            assert m["previous_entry"] == {"event_id": m["start_event"], "page_name": "cart"}
            assert m["start_event"]["timestamp"] == m["start_timestamp"] == m["previous_timestamp"]
        [start] = [m for m in nfa["partial_matches"] if m["start_event"] is None]
        assert (start["state_name"], start["previous_entry"], start["start_timestamp"]) == ("cart", None, -1)
        assert re.fullmatch(r"\d+", start["version"])
        # the shared buffer holds each pending cart once, locked by its match
        events = r["sharedBuffer-events"]
        assert sorted(k["timestamp"] for k, _ in events) == carts
        for k, v in events:
            assert v["ref_count"] == 1 and k["id"] == 0
            e = v["element"]
            assert (e["type"], e["ts"], e["user"]) == ("cart", k["timestamp"], r["key"])
        nodes = r["sharedBuffer-entries-with-lockable-edges"]
        assert sorted((n["event_id"]["timestamp"], n["page_name"]) for n, _ in nodes) == [(ts, "cart") for ts in carts]
        versions = {m["previous_entry"]["event_id"]["timestamp"]: m["version"] for m in pending[r["key"]]}
        for node, lock in nodes:
            [edge] = lock["element"]["edges"]
            assert lock["ref_count"] == edge["ref_count"] == 1 and edge["edge"]["target"] is None
            assert versions[node["event_id"]["timestamp"]] == edge["edge"]["version"] + ".0"
        assert r["eventQueuesStateName"] is None and r["sharedBuffer-events-count"] is None


@pytest.mark.parametrize("name", NAMES)
def test_cep_timers_wait_past_the_watermark(name):
    got = timers(savepoint(name), CEP)
    watermark = model(name)["scenario"]["watermark_at_savepoint"]
    assert got and {(t["domain"], t["service"]) for t in got} == {("event", "watermark-callbacks")}
    assert min(t["timestamp"] for t in got) > watermark
    assert {t["key"] for t in got} == {f"acct_{i:02d}" for i in range(model(name)["scenario"]["users"])}


@pytest.mark.parametrize("name", NAMES)
def test_interval_join_buffers_and_cleanup_timers_are_the_models(name):
    m = model(name)
    want = m["operators"][JOIN]["expected"]
    rows = keyed(savepoint(name), JOIN)
    for side, label, kind in (("LEFT_BUFFER", LEFT, "cart"), ("RIGHT_BUFFER", RIGHT, "pay")):
        got = {r["key"]: sorted([e["element"]["ts"], e["element"]["amount"]] for _, es in r[side] for e in es)
               for r in rows if r[side]}
        assert got == want[label]
        for r in rows:
            for ts, entries in r[side] or []:
                assert [(e["element"]["ts"], e["element"]["type"], e["element"]["user"]) for e in entries] == \
                    [(ts, kind, r["key"])]
                assert [e["has_been_joined"] for e in entries] == [False]
    lower, upper = m["scenario"]["join_bounds_ms"]
    cleanup = {(u, "CLEANUP_LEFT", ts + upper) for u, es in want[LEFT].items() for ts, _ in es} | \
        {(u, "CLEANUP_RIGHT", ts - lower) for u, es in want[RIGHT].items() for ts, _ in es}
    got = timers(savepoint(name), JOIN)  # each timer's namespace is its side
    assert {(t["key"], t["namespace"], t["timestamp"]) for t in got} == cleanup and len(got) == len(cleanup)
    assert {(t["domain"], t["service"]) for t in got} == {("event", "CLEANUP_TIMER")}


@pytest.mark.parametrize("name", NAMES)
def test_session_windows_contents_merges_and_timers_are_the_models(name):
    want = model(name)["operators"][SESSION]["expected"]["open_sessions"]
    rows = keyed(savepoint(name), SESSION)
    contents = {r["key"]: (list(struct.unpack(">qq", r["namespace"])),
                           [[e["type"], e["ts"], e["amount"]] for e in r["window-contents"]])
                for r in rows if r["window-contents"] is not None}
    assert contents == {u: (s["state_window (namespace of window-contents)"], s["window_contents [type, ts, amount]"])
                        for u, s in want.items()}
    merges = {r["key"]: [[[w["f0"]["start"], w["f0"]["end"]], [w["f1"]["start"], w["f1"]["end"]]]
                         for w in r["merging-window-set"]]
              for r in rows if r["merging-window-set"] is not None}
    assert merges == {u: [[s["session_window"], s["state_window (namespace of window-contents)"]]]
                      for u, s in want.items()}
    got = {(t["key"], t["namespace"]["start"], t["namespace"]["end"], t["timestamp"])
           for t in timers(savepoint(name), SESSION)}
    assert got == {(u, *s["session_window"], s["session_window"][1] - 1) for u, s in want.items()}


def test_read_command_gives_the_pending_matches():
    out = run("read", str(savepoint(NAMES[0])), "--uid", CEP, "--state", "nfaStateName", "-f", "jsonl",
              "--engine", "local")
    assert out.returncode == 0, out.stderr
    got = {r["key"]: sorted(m["start_timestamp"] for m in r["nfaStateName"]["partial_matches"] if m["start_event"])
           for r in map(json.loads, out.stdout.splitlines())}
    assert got == model(NAMES[0])["operators"][CEP]["expected"][PENDING]


def test_spark_reads_the_same_cep_and_join_state(spark):
    path = str(savepoint(NAMES[1]))
    df = statectl.open_savepoint(path, spark=spark).keyed(CEP)
    remote = sorted((r["key"], [(m["version"], m["previous_timestamp"]) for m in r["nfa"]])
                    for r in df.selectExpr("key", "nfaStateName.partial_matches AS nfa").collect())
    local = sorted((r["key"], [(m["version"], m["previous_timestamp"]) for m in r["nfaStateName"]["partial_matches"]])
                   for r in keyed(path, CEP))
    assert remote == local
    join = statectl.open_savepoint(path, spark=spark).keyed(JOIN)
    amounts = join.selectExpr("key", "explode(map_values(LEFT_BUFFER)) AS es").selectExpr("key", "es[0].element.amount")
    assert sorted(tuple(r) for r in amounts.collect()) == [("acct_00", 375), ("acct_06", 172), ("acct_16", 152)]


# --- bad bytes ---------------------------------------------------------------------------

def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "sp"
    shutil.copytree(savepoint(NAMES[0]), dst)
    return dst


def _streams_holding(path: Path, marker: bytes) -> list[Path]:
    return [f for f in sorted(path.iterdir()) if marker in f.read_bytes()]


def test_damaged_nfa_state_fails_its_read_in_one_line_and_the_rest_reads(tmp_path):
    path = _copy(tmp_path)
    stream = [f for f in _streams_holding(path, b"NFAStateSerializerSnapshot") if b"\x04pay\x01" in f.read_bytes()][0]
    data = bytearray(stream.read_bytes())
    at = data.index(b"\x04pay\x01") + 5 + 12 + 5  # state name, NodeId flag, EventId, page name "cart"
    assert data[at:at + 4] == (2).to_bytes(4, "big")  # a DeweyNumber of two digits
    data[at:at + 4] = (1 << 28).to_bytes(4, "big")
    stream.write_bytes(bytes(data))
    line = error_line(run("read", str(path), "--uid", CEP, "-f", "jsonl", "--engine", "local"), path)
    assert "a DeweyNumber length of 268435456 runs past its value" in line and stream.name in line
    assert len(keyed(path, JOIN)) == 6
    info = run("info", str(path))
    assert info.returncode == 0 and "nfaStateName" in info.stdout


def test_flipped_or_cut_bytes_end_in_an_error_never_another_exception(tmp_path):
    path = _copy(tmp_path)
    for stream in _streams_holding(path, b"NFAStateSerializerSnapshot"):
        data = stream.read_bytes()
        first = data.rindex(b"TimerSerializerSnapshot") + 120  # past the header: the key groups' entries
        outcomes = []
        changes = [data[:p] + bytes([data[p] ^ 0xFF]) + data[p + 1:] for p in range(first, len(data), 23)]
        changes += [data[:p] for p in range(first, len(data), 101)]
        for changed in changes:
            stream.write_bytes(changed)
            try:
                keyed(path, CEP)
                outcomes.append("rows")
            except StatectlError:
                outcomes.append("error")
        stream.write_bytes(data)
        assert "error" in outcomes and "rows" in outcomes


def test_unknown_snapshot_version_is_refused_in_one_line(tmp_path):
    path = _copy(tmp_path)
    marker = b"BufferEntrySerializerSnapshot" + struct.pack(">iii", 3, COMPOSITE_MAGIC, 2)
    streams = _streams_holding(path, marker)
    assert len(streams) == 2
    for stream in streams:
        stream.write_bytes(stream.read_bytes().replace(marker, marker[:-4] + struct.pack(">i", 9)))
    line = error_line(run("read", str(path), "--uid", JOIN, "--engine", "local"), path)
    assert "BufferEntry serializer snapshot version 9 is not supported (2)" in line
    info = run("info", str(path))
    assert info.returncode == 0 and "interval-join" in info.stdout.split("Unreadable")[1]
    assert len(keyed(path, CEP)) == 5


# --- hand-made values --------------------------------------------------------------------

def _string_value(s: str) -> bytes:
    return bytes([len(s) + 1]) + s.encode()  # short ASCII: one length byte


def _dewey(*digits: int) -> bytes:
    return struct.pack(f">i{len(digits)}i", len(digits), *digits)


def _state(name, node, version, start, previous, event) -> bytes:
    """A ComputationState; *previous* None when the serializer writes no previous timestamp."""
    out = _string_value(name) + (b"\x00" if node is None else b"\x01" + struct.pack(">iq", *node[0])
                                 + _string_value(node[1]))
    out += _dewey(*version) + struct.pack(">q", start) + (b"" if previous is None else struct.pack(">q", previous))
    return out + (b"\x00" if event is None else b"\x01" + struct.pack(">iq", *event))


def _nested_snapshot(cls: str, payload: bytes = b"", version: int = 3) -> bytes:
    name = cls.encode()
    return struct.pack(">H", len(name)) + name + struct.pack(">i", version) + payload


def _composite(cls: str, outer_version: int, outer: bytes, *nested: bytes) -> bytes:
    payload = struct.pack(">ii", COMPOSITE_MAGIC, outer_version) + outer
    payload += struct.pack(">iii", NESTED_MAGIC, 1, len(nested)) + b"".join(nested)
    return _nested_snapshot(cls, payload)


def _nfa_snapshot(outer_version: int, outer: bytes) -> bytes:
    sb, cep = T.library.SHARED, T.library.CEP
    event = _nested_snapshot(sb + "EventId$EventIdSerializer$EventIdSerializerSnapshot")
    return _composite(cep + "NFAStateSerializerSnapshot", outer_version, outer,
                      _nested_snapshot(cep + "DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot"),
                      _composite(sb + "NodeId$NodeIdSerializer$NodeIdSerializerSnapshot", 1, b"", event), event)


def _decode_both_ways(t: T.FlinkType, data: bytes):
    """The value as the column path and as the per-value path decode it (they must agree)."""
    buf = T.Buf(data, "hand-made")
    column, ends = t.column(buf, [0], [len(data)])
    r = Reader(data, "hand-made")
    value = t.read(r)
    assert column.to_pylist() == [value] and int(ends[0]) == r.pos == len(data)
    return value


def test_flink_1_x_nfa_state_without_previous_timestamps():
    t = read_snapshot(Reader(_nfa_snapshot(1, b""), "snapshot"))
    data = struct.pack(">i", 1) + _state("start", None, (3,), -1, None, None)
    data += struct.pack(">i", 1) + _state("end", ((2, 7), "middle"), (1, 0, 2), 5, None, (1, 5))
    assert _decode_both_ways(t, data) == {
        "partial_matches": [{"state_name": "start", "previous_entry": None, "version": "3", "start_timestamp": -1,
                             "previous_timestamp": None, "start_event": None}],
        "completed_matches": [{"state_name": "end", "version": "1.0.2", "start_timestamp": 5,
                               "previous_entry": {"event_id": {"id": 2, "timestamp": 7}, "page_name": "middle"},
                               "previous_timestamp": None, "start_event": {"id": 1, "timestamp": 5}}]}


def test_nfa_state_with_previous_timestamps_and_no_matches():
    t = read_snapshot(Reader(_nfa_snapshot(2, b"\x01"), "snapshot"))
    assert _decode_both_ways(t, struct.pack(">ii", 0, 0)) == {"partial_matches": [], "completed_matches": []}
    data = struct.pack(">i", 1) + _state("s", None, (), 4, 9, None) + struct.pack(">i", 0)
    assert _decode_both_ways(t, data)["partial_matches"][0]["previous_timestamp"] == 9


@pytest.mark.parametrize("outer_version, outer", [(3, b"\x01"), (0, b"")])
def test_unknown_nfa_snapshot_version_is_refused(outer_version, outer):
    with pytest.raises(UnsupportedFlinkFeature, match=f"NFAState serializer snapshot version {outer_version} "
                                                      r"is not supported \(1, 2\)"):
        read_snapshot(Reader(_nfa_snapshot(outer_version, outer), "snapshot"))


def test_a_snapshot_with_too_few_nested_serializers_is_refused():
    cep = T.library.CEP
    snapshot = _composite(cep + "NFAStateSerializerSnapshot", 1, b"",
                          _nested_snapshot(cep + "DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot"))
    with pytest.raises(StatectlError, match=r"a NFAState serializer snapshot holds 1 nested serializer\(s\), not 3"):
        read_snapshot(Reader(snapshot, "snapshot"))


@pytest.mark.parametrize("data, what", [
    (struct.pack(">i", 1) + b"\x02p\x07", "bad presence flag 7"),
    (struct.pack(">i", 1 << 30), "a list count of 1073741824 runs past its value"),
    (struct.pack(">i", -1), "negative collection size"),
])
def test_damaged_hand_made_values_are_refused_both_ways(data, what):
    t = read_snapshot(Reader(_nfa_snapshot(2, b"\x01"), "snapshot"))
    with pytest.raises(StatectlError, match=what):
        t.column(T.Buf(data + bytes(8), "hand-made"), [0], [len(data) + 8])
    with pytest.raises(StatectlError):
        t.read(Reader(data + bytes(8), "hand-made"))


def test_timers_in_a_namespace_of_their_own_are_refused_by_a_write_in_one_line():
    """An interval join's cleanup timers are in the side's String namespace, its buffers in none:
    a write that would decode and encode the operator (a fix replacing it) says so in one line
    rather than write them in another namespace (rescale moves them as their bytes)."""
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.flink.savepoint import open_flink_savepoint
    from statectl.writers.flink.source import operator_binding

    op = open_flink_savepoint(str(savepoint(NAMES[0]))).operator(JOIN)
    with pytest.raises(UsageError) as e:
        operator_binding(op)
    assert str(e.value) == ("operator 'interval-join': timers in a namespace of their own (String) cannot be "
                            "written to a Flink savepoint yet")
    operator_binding(op, keyed_bytes=True)  # moved as their bytes, they keep their namespace
