"""Keyed streams and `_metadata` written without Spark read back through `open_flink_savepoint` and
`read_split`: entries encoded by the writer's task code, sorted as the shuffle sorts them, assembled
per subtask; every state kind, TTL, timers (a repeated timer kept once), TimeWindow namespaces, both
key-group prefix widths, empty subtasks; a repeated value is one error line naming the key."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import LIST_SERIALIZER, MAP_SERIALIZER, parse_type
from statectl.statefmt.flink.headers import StateMeta
from statectl.statefmt.flink.keyhash import flink_key_groups
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split, read_stream
from statectl.statefmt.flink.streams import prefix_bytes, scan_canonical
from statectl.statefmt.flink.types import Buf
from statectl.statefmt.flink.savepoint_write import KeyedStreamFile, commit_flink, flink_operator
from statectl.statefmt.flink.snapshot_write import keyed_header
from statectl.statefmt.flink.stream_write import ENTRY_SCHEMA, StreamState
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import key_group_range
from statectl.writers.flink import EntryEncoder, KeyedStreamTask

LONG, STRING = parse_type("Long", "t"), parse_type("String", "t")
TIMER = "org.apache.flink.streaming.api.operators.TimerSerializer"
TTL = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer"


def write_operator(out: Location, key, ns, metas, inputs, max_p: int, p: int):
    """*inputs*: (state id, kind, value type, user key type, ttl, record batch) per state."""
    common = dict(key=key, key_java="String" if key == STRING else "Long", key_columns=1, namespace=ns,
                  has_namespace=not isinstance(ns, T.VoidNamespace), max_parallelism=max_p, where="op")
    entries = pa.Table.from_batches(
        [EntryEncoder(kind, sid, value=value, user_key=uk, ttl_ms=ttl, **common).encode(batch)
         for sid, kind, value, uk, ttl, batch in inputs], schema=ENTRY_SCHEMA)
    entries = entries.sort_by([("_key_group", "ascending"), ("_state", "ascending"), ("_k", "ascending"),
                               ("_o", "ascending")])
    header = keyed_header(key, metas)
    states = tuple(StreamState(m.name, m.kind, f"state {m.name!r}") for m in metas)
    task = KeyedStreamTask(out.uri, "wtest", header, states, key, max_p, p)
    groups = entries.column("_key_group").to_numpy()
    files = []
    for s in range(p):
        lo, hi = key_group_range(max_p, p, s)
        mine = entries.filter(pa.array((groups >= lo) & (groups <= hi)))
        row = task.write(s, iter(mine.to_batches(max_chunksize=3))).to_pylist()[0]  # small batches
        files.append(KeyedStreamFile(row["subtask"], row["start"], tuple(row["offsets"]), row["file"], row["size"]))
    commit_flink(out, [flink_operator("op", p, max_p, files, [])])


def timer_value_lengths(path) -> list[int]:
    """The value length of every timer entry (Flink writes none)."""
    sp = open_flink_savepoint(path)
    (op,) = sp.metadata.operators
    out = []
    for sub in op.subtasks:
        h = sub.managed_keyed
        data = read_stream(sp.location, h.stream)
        header = read_keyed_header(data, "stream")
        present = [(h.start + i, o) for i, o in enumerate(h.offsets) if o]
        blocks = [(kg, o, e) for (kg, o), e in zip(present, [o for _, o in present[1:]] + [len(data)])]
        for sid, raw in scan_canonical(Buf(data, "stream"), header, blocks, prefix_bytes(op.max_parallelism)).items():
            if header.states[sid].kind == "timers":
                out += (raw.value_ends - raw.value_starts).tolist()
    return out


def tables(path):
    op = open_flink_savepoint(path).operator("op")
    keyed = pa.Table.from_batches([b for s in op.keyed_splits for b in read_split(s, "keyed")], op.keyed_schema)
    timers = pa.Table.from_batches([b for s in op.keyed_splits for b in read_split(s, "timers")],
                                   op.timers_schema)
    return keyed.sort_by("key"), timers.sort_by([("key", "ascending"), ("timestamp", "ascending")])


@pytest.mark.parametrize("max_p,p", [(128, 3), (256, 2), (4096, 5)])
def test_every_state_kind_reads_back(tmp_path, max_p, p):
    keys = [f"k{i}" for i in range(40)] + ["é€😀"]
    n = len(keys)
    count = pa.record_batch({"_k0": keys, "_val": pa.array([i if i % 7 else None for i in range(n)], pa.int64())})
    elements = pa.record_batch({"_k0": [k for k in keys for _ in range(3)],
                                "_val": [f"{k}-{j}" for k in keys for j in (2, 0, 1)],
                                "_ord": pa.array([j for _ in keys for j in (2, 0, 1)], pa.int64())})
    entries = pa.record_batch({"_k0": keys[:10] * 2, "_uk": [f"a{i // 10}" for i in range(20)],
                               "_val": pa.array([i if i != 3 else None for i in range(20)], pa.int64())})
    ttl = pa.record_batch({"_k0": keys, "_val": [k.upper() for k in keys]})
    timers = pa.record_batch({"_k0": keys[:5] + keys[:5], "_ts": pa.array([1000, 2000, 3000, 4000, 5000] * 2)})
    void = parse_type("VoidNamespace", "t")
    metas = [StateMeta("count", "value", LONG, void),
             StateMeta("events", "list", T.List(STRING, LIST_SERIALIZER), void),
             StateMeta("attrs", "map", T.Map(STRING, LONG, MAP_SERIALIZER), void, STRING),
             StateMeta("ttl_name", "value", T.Ttl(STRING, TTL), void),
             StateMeta("_timer_state/event_user-timers", "timers", T.Timer(STRING, void, TIMER), void)]
    out = Location.of(str(tmp_path / "sp"))
    write_operator(out, STRING, void, metas, [
        (0, "value", LONG, None, None, count), (1, "list", STRING, None, None, elements),
        (2, "map", LONG, STRING, None, entries), (3, "value", T.Ttl(STRING, TTL), None, 1_700_000_000_000, ttl),
        (4, "timers", None, None, None, timers)], max_p, p)
    keyed, timer_table = tables(str(tmp_path / "sp"))
    assert keyed.column("key").to_pylist() == sorted(keys)
    got = {r["key"]: r for r in keyed.to_pylist()}
    for i, k in enumerate(keys):
        assert got[k]["count"] == (i if i % 7 else None)
        assert got[k]["events"] == [f"{k}-0", f"{k}-1", f"{k}-2"]  # in order_by order
        assert got[k]["ttl_name"] == k.upper() and got[k]["ttl_name_ttl_ts"] == 1_700_000_000_000
    assert got["k0"]["attrs"] == [("a0", 0), ("a1", 10)]
    assert got["k3"]["attrs"] == [("a0", None), ("a1", 13)]
    expected_groups = flink_key_groups(pa.array(sorted(keys)), "String", max_p)
    assert keyed.column("_key_group").to_numpy().tolist() == expected_groups.tolist()
    assert timer_table.select(["key", "timestamp"]).to_pylist() == sorted(
        [{"key": k, "timestamp": t} for k, t in zip(keys[:5], [1000, 2000, 3000, 4000, 5000])],
        key=lambda r: r["key"])  # the repeated timers once each
    assert timer_value_lengths(str(tmp_path / "sp")) == [0] * 5


def test_windows_and_long_keys_read_back(tmp_path):
    window = parse_type("TimeWindow", "t")
    ns = pa.array([{"start": 0, "end": 10_000}, {"start": 10_000, "end": 20_000}] * 3,
                  window.arrow())
    keys = pa.array([1, 1, 2, 2, -(2**62), -(2**62)], pa.int64())
    value = parse_type("Tuple2<String, Long>", "t")
    contents = pa.record_batch({"_k0": keys, "_ns": ns,
                                "_val": pa.array([{"f0": "x", "f1": i} for i in range(6)], value.arrow())})
    timers = pa.record_batch({"_k0": keys, "_ns": ns, "_ts": pc.subtract(pc.struct_field(ns, [1]), 1)})
    metas = [StateMeta("window-contents", "reducing", value, window),
             StateMeta("_timer_state/event_window-timers", "timers", T.Timer(LONG, window, TIMER), window)]
    write_operator(Location.of(str(tmp_path / "sp")), LONG, window, metas,
                   [(0, "value", value, None, None, contents), (1, "timers", None, None, None, timers)], 128, 2)
    keyed, timer_table = tables(str(tmp_path / "sp"))
    rows = sorted((r["key"], r["namespace"]["start"], r["window-contents"]["f1"]) for r in keyed.to_pylist())
    assert rows == sorted((k, w["start"], i) for i, (k, w) in enumerate(zip(keys.to_pylist(), ns.to_pylist())))
    assert sorted(timer_table.column("timestamp").to_pylist()) == [9999] * 3 + [19999] * 3


def test_two_values_for_one_key_is_one_line(tmp_path):
    void = parse_type("VoidNamespace", "t")
    batch = pa.record_batch({"_k0": ["a", "b", "a"], "_val": pa.array([1, 2, 3], pa.int64())})
    with pytest.raises(FlinkEncodeError) as e:
        write_operator(Location.of(str(tmp_path / "sp")), STRING, void, [StateMeta("n", "value", LONG, void)],
                       [(0, "value", LONG, None, None, batch)], 128, 1)
    assert str(e.value) == ("state 'n': two rows for key 'a' (key group "
                            f"{int(flink_key_groups(pa.array(['a']), 'String', 128)[0])}); "
                            "a value state holds one value per key")
    assert not (tmp_path / "sp" / "_metadata").exists()
    assert [p.name for p in (tmp_path / "sp").iterdir()] == []  # the task removed its stream
