"""`readers/stats.py`: every figure of `statectl stats` equals the same figure computed from a
full decoded read (the local engine's rows, sized value by value in Python), for statectl's own
formats and every Flink fixture; subtask loads equal the key-group sums of the key-group ranges;
TTL expiry equals a count over the decoded rows with Flink's rule; a damaged part is reported
unreadable while the rest is measured."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from support.readers_savepoints import build_own_family
from statectl.readers.local import local_table
from statectl.readers.measure import value_bytes, value_elements
from statectl.readers.questions import StateQuestions
from statectl.readers.resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice
from statectl.readers.stats import savepoint_stats
from statectl.readers.tally import StateTally, buckets, render
from statectl.statefmt.errors import UnknownOperatorError, UsageError
from statectl.statefmt.expiry import Ttls
from statectl.statefmt.formats import load
from statectl.statefmt.keygroups import key_group_range
from statectl.statefmt.model import KEYED_PART, KeyedStateDescriptor

FIXTURES = Path(__file__).parents[1] / "fixtures"
FLINK = (sorted(FIXTURES.glob("flink-dev/*/savepoint"))
         + sorted(p for p in FIXTURES.glob("flink-sql-probe/*") if p.is_dir())
         + sorted(FIXTURES.glob("flink-avro-dev/*/savepoint"))
         + sorted(FIXTURES.glob("flink-realworld-dev/*/savepoint"))
         + [Path(__file__).parents[2] / "examples" / "flink" / "savepoint"])
GOLDEN = sorted(FIXTURES.glob("golden/*/savepoint"))  # statectl's own formats, as committed
TTL_FIXTURES = [FIXTURES / "flink-dev" / n / "savepoint"
                for n in ("pojo-hashmap-canonical", "pojo-rocksdb-canonical", "tuple-rocksdb-native")]
NOW = 1_795_346_176_410  # among the TTL fixtures' last-access times: some entries expired, some not
TOP = 4


def fixture_id(p: Path) -> str:
    return p.parent.name if p.name == "savepoint" else p.name


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    own = build_own_family(tmp_path_factory.mktemp("own"))
    return [own[name].location for name in ("canonical", "source", "native")]


# --- sizes of values, in Python, value by value ---------------------------------------------

def py_bytes(value, t: pa.DataType) -> int:
    """A value's bytes as `docs/STATS.md` defines them, from its Python value."""
    if value is None:
        return 0
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return len(value.encode())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return len(value)
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_map(t):
        return sum(py_bytes(k, t.key_type) + py_bytes(v, t.item_type) for k, v in value)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return sum(py_bytes(v, t.value_type) for v in value)
    if pa.types.is_struct(t):
        return sum(py_bytes(value[t.field(i).name], t.field(i).type) for i in range(t.num_fields))
    return t.bit_width // 8


def py_elements(value, t: pa.DataType) -> int:
    if value is None:
        return 0
    return len(value) if (pa.types.is_map(t) or pa.types.is_list(t)) else 1


NESTED = st.recursive(
    st.sampled_from([pa.int64(), pa.int32(), pa.float64(), pa.bool_(), pa.string(), pa.binary(),
                     pa.timestamp("ms"), pa.int8()]),
    lambda inner: st.one_of(
        st.builds(pa.list_, inner),
        st.builds(lambda k, v: pa.map_(k, v), st.sampled_from([pa.string(), pa.int64()]), inner),
        st.builds(lambda a, b: pa.struct([("a", a), ("b", b)]), inner, inner)),
    max_leaves=4)


def values_of(t: pa.DataType):
    if pa.types.is_string(t):
        base = st.text(max_size=6)
    elif pa.types.is_binary(t):
        base = st.binary(max_size=6)
    elif pa.types.is_boolean(t):
        base = st.booleans()
    elif pa.types.is_floating(t):
        base = st.floats(allow_nan=False)
    elif pa.types.is_integer(t) or pa.types.is_timestamp(t):
        base = st.integers(-100, 100)
    elif pa.types.is_map(t):
        base = st.dictionaries(values_of(t.key_type).filter(lambda k: k is not None), values_of(t.item_type),
                               max_size=3).map(lambda d: list(d.items()))
    elif pa.types.is_list(t):
        base = st.lists(values_of(t.value_type), max_size=3)
    else:
        base = st.fixed_dictionaries({"a": values_of(t.field(0).type), "b": values_of(t.field(1).type)})
    return st.none() | base


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_value_sizes_equal_python_sizes(data):
    t = data.draw(NESTED)
    rows = data.draw(st.lists(values_of(t), max_size=6))
    cut = data.draw(st.integers(0, len(rows)))
    column = pa.array(rows, t).slice(cut)  # a slice: offsets that do not start at zero
    assert value_bytes(column).tolist() == [py_bytes(v, t) for v in rows[cut:]]
    assert value_elements(column).tolist() == [py_elements(v, t) for v in rows[cut:]]


def test_buckets_count_every_value_in_equal_ranges():
    values = np.array([0, 5, 9, 10, 99], dtype=np.int64)
    found = buckets(values, 10)
    assert [(b.start, b.end, b.count) for b in found[:2]] == [(0, 9, 3), (10, 19, 1)]
    assert sum(b.count for b in found) == 5 and found[-1].end == 99
    extreme = np.array([-2**63, 2**63 - 1], dtype=np.int64)
    assert [b.count for b in buckets(extreme, 4)] == [1, 0, 0, 1]
    assert buckets(np.array([7, 7]), 10)[0].count == 2 and buckets(np.zeros(0, np.int64)) == []


# --- every figure against the decoded rows ---------------------------------------------------

def assert_state(op, state_figures, rows: pa.Table, ttls: Ttls, now: int):
    desc = op.keyed.state(state_figures.name)
    t = rows.schema.field(desc.name).type
    values = rows.column(desc.name).to_pylist()
    sizes = [py_bytes(v, t) for v in values]
    where = f"{op.label}.{desc.name}"
    assert state_figures.rows == sum(v is not None for v in values), where
    assert state_figures.elements == sum(py_elements(v, t) for v in values), where
    assert state_figures.bytes == sum(sizes), where
    held = [i for i, v in enumerate(values) if v is not None]
    assert [k.bytes for k in state_figures.largest] == sorted((sizes[i] for i in held), reverse=True)[:TOP], where
    keys = key_texts(op, rows)
    for k in state_figures.largest:  # each key named is one with that size
        assert any(keys[i] == (k.key, k.namespace) and sizes[i] == k.bytes for i in held), (where, k)
    if desc.kind in ("list", "map"):
        counts = [py_elements(values[i], t) for i in held]
        assert [k.elements for k in state_figures.most_elements] == sorted(counts, reverse=True)[:TOP], where
    else:
        assert state_figures.most_elements is None
    if desc.ttl:
        assert_ttl(desc, state_figures.ttl, rows, ttls, now)
    else:
        assert state_figures.ttl is None


def key_texts(op, rows: pa.Table) -> list[tuple[str, str | None]]:
    names = op.keyed.key_names
    columns = [rows.column(n).to_pylist() for n in names]
    keys = [render(v[0]) if len(v) == 1 else render(tuple(v)) for v in zip(*columns)]
    spaces = rows.column("namespace").to_pylist() if "namespace" in rows.column_names else [None] * len(keys)
    return [(k, None if s is None else render(s)) for k, s in zip(keys, spaces)]


def assert_ttl(desc: KeyedStateDescriptor, ttl, rows: pa.Table, ttls: Ttls, now: int):
    """Entries and expired ones counted row by row: expired when last access + TTL <= now."""
    t = rows.schema.field(desc.name).type
    entries = []  # (last access, bytes) of every entry
    for value, stamp in zip(rows.column(desc.name).to_pylist(), rows.column(desc.name + "_ttl_ts").to_pylist()):
        if stamp is None:
            continue
        if desc.kind == "map":
            entries += [(s, py_bytes(k, t.key_type) + py_bytes(v, t.item_type)) for (k, v), (_, s) in zip(value, stamp)]
        elif desc.kind == "list":
            entries += [(s, py_bytes(v, t.value_type)) for v, s in zip(value, stamp)]
        else:
            entries.append((stamp, py_bytes(value, t)))
    assert ttl.entries == len(entries) > 0
    assert (ttl.first_access, ttl.last_access) == (min(s for s, _ in entries), max(s for s, _ in entries))
    assert sum(b.count for b in ttl.last_access_buckets) == len(entries)
    duration = ttls.of(desc.name)
    if duration is None:
        assert (ttl.ttl_ms, ttl.expired_entries, ttl.expired_bytes) == (None, None, None)
    else:
        gone = [b for s, b in entries if s + duration <= now]
        assert (ttl.ttl_ms, ttl.expired_entries, ttl.expired_bytes) == (duration, len(gone), sum(gone))


def assert_keyed(sp, op, figures, parallelism):
    rows = local_table(sp, TableChoice(op, KEYED), include_key_group=True)
    assert figures.rows == rows.num_rows
    sizes = StateQuestions(sp, op).key_group_sizes(KEYED)  # the seam's own answer, its own decode
    assert [(g.key_group, g.rows, g.bytes) for g in figures.key_groups] == list(
        zip(sizes["key_group"].to_pylist(), sizes["rows"].to_pylist(), sizes["bytes"].to_pylist()))
    assert figures.bytes == sum(StateQuestions(sp, op).split_sizes(KEYED)["bytes"].to_pylist())
    for spread, p in ((figures.subtasks, op.parallelism), (figures.rescaled, parallelism)):
        assert spread.parallelism == p
        for s in spread.subtasks:
            lo, hi = key_group_range(op.max_parallelism, p, s.subtask)
            inside = [g for g in figures.key_groups if lo <= g.key_group <= hi]
            assert (s.first_key_group, s.last_key_group) == (lo, hi)
            assert (s.rows, s.bytes) == (sum(g.rows for g in inside), sum(g.bytes for g in inside))
        total = sum(s.bytes for s in spread.subtasks)
        assert spread.skew == (round(max(s.bytes for s in spread.subtasks) * p / total, 4) if total else None)
    timers = local_table(sp, TableChoice(op, TIMERS))
    by_domain = {}
    for ts, domain in zip(pc.cast(timers.column("timestamp"), pa.int64()).to_pylist() if timers.num_rows else [],
                          timers.column("domain").to_pylist()):
        by_domain.setdefault(domain, []).append(ts)
    unit = 1000 if timers.num_rows and pa.types.is_timestamp(timers.schema.field("timestamp").type) else 1
    assert {t.domain: t.count for t in figures.timers} == {d: len(v) for d, v in by_domain.items()}
    for t in figures.timers:
        assert (t.first, t.last) == (min(by_domain[t.domain]) // unit, max(by_domain[t.domain]) // unit)
        assert sum(b.count for b in t.buckets) == t.count
    return rows


def assert_stats(path, ttls=Ttls(), now=NOW, parallelism=3):
    sp = load(str(path))
    found = savepoint_stats(sp, now=now, ttls=ttls, parallelism=parallelism, top=TOP)
    assert found.metadata_bytes == os.path.getsize(Path(sp.location) / "_metadata")
    assert found.bytes == sum(o.bytes for o in found.operators)
    assert [o.operator_id for o in found.operators] == [op.operator_id for op in sp.operators]
    measured = 0
    for op, figures in zip(sp.operators, found.operators):
        assert [(u.part, u.reason) for u in figures.unreadable] == [(u.part, u.reason) for u in op.unreadable]
        if op.keyed is not None and op.unreadable_part(KEYED_PART) is None:
            rows = assert_keyed(sp, op, figures.keyed, parallelism)
            assert [s.name for s in figures.keyed.states] == [s.name for s in op.keyed.states]
            for state in figures.keyed.states:
                assert_state(op, state, rows, ttls, now)
            measured += rows.num_rows
        for state in figures.operator_states:
            assert state.rows == local_table(sp, TableChoice(op, OPERATOR_STATE, (state.name,))).num_rows
            assert state.bytes == sum(StateQuestions(sp, op).split_sizes(state.name)["bytes"].to_pylist())
        assert figures.bytes == (figures.keyed.bytes if figures.keyed else 0) + sum(
            s.bytes for s in figures.operator_states)
        if not any(op.data_files()):  # every byte of its state, if any, lies in _metadata
            assert figures.inline_bytes >= figures.bytes
        if op.format != "flink":
            assert figures.inline_bytes == 0
    assert found.inline_bytes < found.metadata_bytes
    return found, measured


def test_stats_of_statectl_canonical_and_rocksdb(own):
    assert sum(assert_stats(path)[1] for path in own) > 50


@pytest.mark.parametrize("path", GOLDEN, ids=fixture_id)
def test_stats_of_statectl_golden_savepoints(path):
    assert assert_stats(path)[1] > 0


@pytest.mark.parametrize("path", FLINK, ids=fixture_id)
def test_stats_of_flink_savepoints(path):
    found, _ = assert_stats(path)
    assert found.operators


@pytest.mark.parametrize("path", TTL_FIXTURES, ids=fixture_id)
def test_ttl_expiry_equals_a_count_over_decoded_rows(path):
    def ttl_states(found):
        return [s for o in found.operators if o.keyed for s in o.keyed.states if s.ttl]
    times = [(s.ttl.first_access, s.ttl.last_access) for s in ttl_states(assert_stats(path)[0])]
    middle = (max(t[0] for t in times) + min(t[1] for t in times)) // 2  # among every state's times
    for ttls in (Ttls(every=1), Ttls(per_state={"ttl_seen": 1}), Ttls(every=10**12)):
        states = ttl_states(assert_stats(path, ttls=ttls, now=middle + 1)[0])
        assert {s.name for s in states} == {"ttl_last", "ttl_seen"}
    states = ttl_states(assert_stats(path, ttls=Ttls(every=1), now=middle + 1)[0])
    assert all(0 < s.ttl.expired_entries < s.ttl.entries for s in states)  # some expired, not all


def test_list_state_ttl_counts_each_element():
    """A list state's TTL stamps one time per element: each element expires on its own."""
    desc = KeyedStateDescriptor("seen", "list", "string", ttl=True)
    batch = pa.record_batch({"_key_group": pa.array([0, 1, 2], pa.int32()), "key": ["a", "b", "c"],
                             "seen": pa.array([["x", "yy"], ["zzz"], None]),
                             "seen_ttl_ts": pa.array([[100, 300], [200], None], pa.list_(pa.int64()))})
    tally = StateTally(desc, ["key"], False, 2)
    tally.add(batch)
    assert (tally.rows, tally.elements, tally.bytes) == (2, 3, 6)
    assert tally.expired(ttl=50, now=250) == (2, 4)  # x (100) and zzz (200)
    assert [(k.key, k.bytes) for k in tally.largest.figures()] == [("a", 3), ("b", 3)]  # a tie: first seen
    assert [(k.key, k.elements) for k in tally.most.figures()] == [("a", 2), ("b", 1)]


def test_only_the_operators_asked_for(own):
    sp = load(own[0])
    found = savepoint_stats(sp, ["proc", "proc"])
    assert [o.uid for o in found.operators] == ["proc"]
    with pytest.raises(UnknownOperatorError, match="nope"):
        savepoint_stats(sp, ["nope"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(top=-1), "--top must be a whole number of keys, 0 or more; got -1"),
    (dict(parallelism=0), "--parallelism must be at least 1, got 0"),
    (dict(parallelism=10**6), "--parallelism 1000000 exceeds the max parallelism"),
])
def test_bad_figures_are_one_clear_error(own, kwargs, message):
    with pytest.raises(UsageError) as e:
        savepoint_stats(load(own[0]), **kwargs)
    assert str(e.value).startswith(message)


def test_a_damaged_keyed_file_is_reported_and_the_rest_measured(own, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(own[1], copy)
    sp = load(str(copy))
    op = next(o for o in sp.operators if o.keyed is not None)
    damaged = copy / op.keyed.files[0].ref.path
    damaged.write_bytes(damaged.read_bytes()[:-10])
    found = savepoint_stats(sp)
    figures = next(o for o in found.operators if o.operator_id == op.operator_id)
    assert figures.keyed is None
    assert [u.part for u in figures.unreadable] == [KEYED_PART]
    assert damaged.name in figures.unreadable[0].reason
    others = [o for o in found.operators if o.operator_id != op.operator_id]
    assert others and all(not o.unreadable for o in others)
    assert sum(o.bytes for o in others) == sum(o.bytes for o in savepoint_stats(load(own[1])).operators
                                               if o.operator_id != op.operator_id) > 0
