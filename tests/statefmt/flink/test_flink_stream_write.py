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
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.flink.streams import prefix_bytes, scan_canonical
from statectl.statefmt.flink.types import Buf
from statectl.statefmt.flink.savepoint_write import KeyedStreamFile, commit_flink, flink_operator
from statectl.statefmt.flink.snapshot_write import keyed_header
from statectl.statefmt.flink.stream_write import StreamState, row_schema
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import key_group_range
from statectl.writers.flink.encoding import EntryEncoder, KeyedStreamTask, StateEncoding

LONG, STRING = parse_type("Long", "t"), parse_type("String", "t")
TIMER = "org.apache.flink.streaming.api.operators.TimerSerializer"
TTL = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer"


def write_operator(out: Location, key, ns, metas, inputs, max_p: int, p: int):
    """*inputs*: per input, a record batch (columns ``_k0``, ``_ns``, ``_val<i>``, ``_uk<i>``, ``_ord<i>``,
    ``_ts<i>`` for state id *i*) and the (state id, kind, value type, user key type, ttl) of the
    states it holds."""
    ordered = {sid for batch, states in inputs for sid, *_ in states if f"_ord{sid}" in batch.schema.names}
    states = tuple(StreamState(m.name, m.kind, f"state {m.name!r}", i in ordered) for i, m in enumerate(metas))
    schema = row_schema(states)
    common = dict(schema=schema, key=key, key_java="String" if key == STRING else "Long", key_columns=1,
                  namespace=ns, has_namespace=not isinstance(ns, T.VoidNamespace), max_parallelism=max_p,
                  where="op")
    entries = pa.Table.from_batches(
        [EntryEncoder(tuple(StateEncoding(sid, kind, value, uk, ttl, sid in ordered, f"state {sid}")
                            for sid, kind, value, uk, ttl in encodings), **common).encode(batch)
         for batch, encodings in inputs], schema=schema)
    entries = entries.sort_by([("_key_group", "ascending"), ("_k", "ascending")])  # as the shuffle sorts
    header = keyed_header(key, metas)
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
    if op.timers_schema is None:  # no timer state in the header
        return keyed.sort_by("key"), None
    timers = pa.Table.from_batches([b for s in op.keyed_splits for b in read_split(s, "timers")],
                                   op.timers_schema)
    return keyed.sort_by("key"), timers.sort_by([("key", "ascending"), ("timestamp", "ascending")])


@pytest.mark.parametrize("max_p,p", [(128, 3), (256, 2), (4096, 5)])
def test_every_state_kind_reads_back(tmp_path, max_p, p):
    keys = [f"k{i}" for i in range(40)] + ["é€😀"]
    n = len(keys)
    count = pa.record_batch({"_k0": keys, "_val0": pa.array([i if i % 7 else None for i in range(n)], pa.int64())})
    elements = pa.record_batch({"_k0": [k for k in keys for _ in range(3)],
                                "_val1": [f"{k}-{j}" for k in keys for j in (2, 0, 1)],
                                "_ord1": pa.array([j for _ in keys for j in (2, 0, 1)], pa.int64())})
    entries = pa.record_batch({"_k0": keys[:10] * 2, "_uk2": [f"a{i // 10}" for i in range(20)],
                               "_val2": pa.array([i if i != 3 else None for i in range(20)], pa.int64())})
    ttl = pa.record_batch({"_k0": keys, "_val3": [k.upper() for k in keys]})
    timers = pa.record_batch({"_k0": keys[:5] + keys[:5], "_ts4": pa.array([1000, 2000, 3000, 4000, 5000] * 2)})
    void = parse_type("VoidNamespace", "t")
    metas = [StateMeta("count", "value", LONG, void),
             StateMeta("events", "list", T.List(STRING, LIST_SERIALIZER), void),
             StateMeta("attrs", "map", T.Map(STRING, LONG, MAP_SERIALIZER), void, STRING),
             StateMeta("ttl_name", "value", T.Ttl(STRING, TTL), void),
             StateMeta("_timer_state/event_user-timers", "timers", T.Timer(STRING, void, TIMER), void)]
    out = Location.of(str(tmp_path / "sp"))
    write_operator(out, STRING, void, metas, [
        (count, [(0, "value", LONG, None, None)]), (elements, [(1, "list", STRING, None, None)]),
        (entries, [(2, "map", LONG, STRING, None)]),
        (ttl, [(3, "value", T.Ttl(STRING, TTL), None, 1_700_000_000_000)]),
        (timers, [(4, "timers", None, None, None)])], max_p, p)
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
                                "_val0": pa.array([{"f0": "x", "f1": i} for i in range(6)], value.arrow())})
    timers = pa.record_batch({"_k0": keys, "_ns": ns, "_ts1": pc.subtract(pc.struct_field(ns, [1]), 1)})
    metas = [StateMeta("window-contents", "reducing", value, window),
             StateMeta("_timer_state/event_window-timers", "timers", T.Timer(LONG, window, TIMER), window)]
    write_operator(Location.of(str(tmp_path / "sp")), LONG, window, metas,
                   [(contents, [(0, "value", value, None, None)]), (timers, [(1, "timers", None, None, None)])],
                   128, 2)
    keyed, timer_table = tables(str(tmp_path / "sp"))
    rows = sorted((r["key"], r["namespace"]["start"], r["window-contents"]["f1"]) for r in keyed.to_pylist())
    assert rows == sorted((k, w["start"], i) for i, (k, w) in enumerate(zip(keys.to_pylist(), ns.to_pylist())))
    assert sorted(timer_table.column("timestamp").to_pylist()) == [9999] * 3 + [19999] * 3


def test_two_values_for_one_key_is_one_line(tmp_path):
    void = parse_type("VoidNamespace", "t")
    batch = pa.record_batch({"_k0": ["a", "b", "a"], "_val0": pa.array([1, 2, 3], pa.int64())})
    with pytest.raises(FlinkEncodeError) as e:
        write_operator(Location.of(str(tmp_path / "sp")), STRING, void, [StateMeta("n", "value", LONG, void)],
                       [(batch, [(0, "value", LONG, None, None)])], 128, 1)
    assert str(e.value) == ("state 'n': two rows for key 'a' (key group "
                            f"{int(flink_key_groups(pa.array(['a']), 'String', 128)[0])}); "
                            "a value state holds one value per key")
    assert not (tmp_path / "sp" / "_metadata").exists()
    assert [p.name for p in (tmp_path / "sp").iterdir()] == []  # the task removed its stream


def test_states_sharing_an_input_are_written_as_from_their_own_inputs(tmp_path):
    """One input row carries several states' entries: a value set on some rows only, two lists
    ordered by different columns, a map; the stream is byte for byte the one written from an
    input per state."""
    keys = [f"k{i}" for i in range(30) for _ in range(3)]
    j = [r % 3 for r in range(len(keys))]
    columns = {"_k0": keys,
               "_val0": pa.array([r if r % 3 == 1 else None for r in range(len(keys))], pa.int64()),
               "_val1": [f"e{r}" for r in range(len(keys))], "_ord1": pa.array(j, pa.int64()),
               "_val2": [f"t{r}" for r in range(len(keys))], "_ord2": pa.array([-x for x in j], pa.int64()),
               "_uk3": [f"u{2 - x}" for x in j], "_val3": pa.array(range(len(keys)), pa.int64())}
    void = parse_type("VoidNamespace", "t")
    metas = [StateMeta("count", "value", LONG, void),
             StateMeta("events", "list", T.List(STRING, LIST_SERIALIZER), void),
             StateMeta("tags", "list", T.List(STRING, LIST_SERIALIZER), void),
             StateMeta("attrs", "map", T.Map(STRING, LONG, MAP_SERIALIZER), void, STRING)]
    encodings = [(0, "value", LONG, None, None), (1, "list", STRING, None, None), (2, "list", STRING, None, None),
                 (3, "map", LONG, STRING, None)]
    own = {0: ["_val0"], 1: ["_val1", "_ord1"], 2: ["_val2", "_ord2"], 3: ["_uk3", "_val3"]}
    shared, apart = tmp_path / "shared", tmp_path / "apart"
    write_operator(Location.of(str(shared)), STRING, void, metas,
                   [(pa.record_batch(columns), encodings)], 128, 2)
    write_operator(Location.of(str(apart)), STRING, void, metas,
                   [(pa.record_batch({"_k0": keys, **{c: columns[c] for c in own[e[0]]}}), [e]) for e in encodings],
                   128, 2)
    keyed, _ = tables(str(shared))
    assert keyed.to_pylist() == tables(str(apart))[0].to_pylist()
    got = {r["key"]: r for r in keyed.to_pylist()}
    assert len(got) == 30
    assert got["k1"]["count"] == 4 and got["k1"]["events"] == ["e3", "e4", "e5"]
    assert got["k1"]["tags"] == ["t5", "t4", "t3"]
    assert got["k1"]["attrs"] == [("u0", 5), ("u1", 4), ("u2", 3)]
    streams = [sorted(p.read_bytes() for p in d.iterdir() if p.name != "_metadata") for d in (shared, apart)]
    assert streams[0] == streams[1]


def test_rows_with_no_entry_are_not_written(tmp_path):
    void = parse_type("VoidNamespace", "t")
    batch = pa.record_batch({"_k0": ["a", "b", "c"], "_val0": pa.array([1, None, None], pa.int64()),
                             "_val1": pa.array([None, "x", None], pa.string())})
    write_operator(Location.of(str(tmp_path / "sp")), STRING, void,
                   [StateMeta("n", "value", LONG, void), StateMeta("s", "value", STRING, void)],
                   [(batch, [(0, "value", LONG, None, None), (1, "value", STRING, None, None)])], 128, 1)
    keyed, _ = tables(str(tmp_path / "sp"))
    assert keyed.select(["key", "n", "s"]).to_pylist() == [{"key": "a", "n": 1, "s": None},
                                                           {"key": "b", "n": None, "s": "x"}]


def test_a_null_key_is_one_line_even_when_its_row_has_no_value(tmp_path):
    void = parse_type("VoidNamespace", "t")
    batch = pa.record_batch({"_k0": pa.array(["a", None], pa.string()), "_val0": pa.array([1, None], pa.int64())})
    with pytest.raises(FlinkEncodeError) as e:
        write_operator(Location.of(str(tmp_path / "sp")), STRING, void, [StateMeta("n", "value", LONG, void)],
                       [(batch, [(0, "value", LONG, None, None)])], 128, 1)
    assert str(e.value) == "op: a row has a null key; Flink keys cannot be null"
