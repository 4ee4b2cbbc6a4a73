"""`prune`: the TTL entries expired at a time, or the keyed rows a condition selects, gone;
everything else kept exactly.

For each base the output's full read (every keyed table with `_key_group` and TTL timestamps,
every timer table, every operator state; `test_roundtrip_law.full_read`) equals the base's
with exactly the pruned operator's keyed table (and, for a condition, its timers) changed, and
that table equals the base's table pruned row by row by a plain-Python statement of Flink's
rule. Bases: the suite's Flink 2.3 job (a one-day TTL `ValueState<String>` ttl_last and
`MapState<String, Long>` ttl_seen; hashmap canonical and RocksDB native), the SQL job with
table.exec.state.ttl, a Flink savepoint bootstrapped with TTL value, list and map states and
hand-picked timestamps (nulls, the overflow clamp), and statectl's own canonical and RocksDB
formats (a condition: they hold no TTL state).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pyarrow as pa
import pytest

from support import flink_job
from support.cli_runner import statectl
from support.savepoint_rows import tree_digest
from statectl.readers.local import local_table
from statectl.readers.resolve import KEYED, TableChoice
from statectl.statefmt.errors import UnknownStateError, UsageError
from statectl.statefmt.formats import load
from statectl.writers.prune import Prune, prune

from support.full_read import full_read, rows as _rows

SPEC = Path(__file__).resolve().parents[2] / "examples" / "spec.yaml"
LONG_MAX = 2**63 - 1
FLINK = {"2.3.0-hashmap-canonical": dict(backend="hashmap", format="canonical"),
         "2.3.0-rocksdb-native": dict(backend="rocksdb", format="native")}


def expired(ts, ttl: int, now: int) -> bool:
    """Flink's TtlUtils.expired, in plain Python ints (the oracle the columnar rule must match)."""
    if ts is None:
        return False
    expiration = ts + (min(ttl, LONG_MAX - ts) if ts > 0 else ttl)
    return expiration <= now


def pruned_rows(table: pa.Table, ttls: dict[str, tuple[str, int]], now: int, states: list[str]) -> pa.Table:
    """*table* without the entries of *ttls* ({state: (kind, ttl)}) expired at *now*, row by row."""
    out = []
    for row in table.to_pylist():
        for name, (kind, ttl) in ttls.items():
            value, stamps = row[name], row[f"{name}_ttl_ts"]
            if value is None:
                continue
            if kind == "map":  # the timestamps' map has the same keys in the same order
                assert [k for k, _ in value] == [k for k, _ in stamps]
                pairs = [(entry, at) for entry, at in zip(value, stamps) if not expired(at[1], ttl, now)]
                kept, kept_ts = [e for e, _ in pairs], [t for _, t in pairs]
            elif kind == "list":
                pairs = [(v, t) for v, t in zip(value, stamps) if not expired(t, ttl, now)]
                kept, kept_ts = [v for v, _ in pairs], [t for _, t in pairs]
            else:
                gone = expired(stamps, ttl, now)
                row[name], row[f"{name}_ttl_ts"] = (None, None) if gone else (value, stamps)
                continue
            emptied = value and not kept
            row[name], row[f"{name}_ttl_ts"] = (None, None) if emptied else (kept, kept_ts)
        if any(row[s] is not None for s in states):
            out.append(row)
    return pa.Table.from_pylist(out, table.schema)


def keyed_of(path, label: str) -> pa.Table:
    sp = load(str(path))
    return local_table(sp, TableChoice(sp.operator(label), KEYED), include_key_group=True)


def midpoint(table: pa.Table, columns: list[str]) -> int:
    """The median of every TTL timestamp of *columns*: about half are at most it."""
    stamps = []
    for c in columns:
        for v in table.column(c).to_pylist():
            stamps += [t for _, t in v] if isinstance(v, list) and v and isinstance(v[0], tuple) else \
                (v if isinstance(v, list) else [v] if v is not None else [])
    return int(statistics.median(stamps))


def assert_only_changed(base, out, changed: dict) -> None:
    """*out*'s full read is *base*'s with the tables *changed* names ({(label, table): rows})."""
    before, after = full_read(base), full_read(out)
    assert set(after) == set(before)
    for table, rows in changed.items():
        assert after[table] == rows, table
    assert {k: v for k, v in after.items() if k not in changed} == \
        {k: v for k, v in before.items() if k not in changed}


@pytest.fixture(scope="module")
def flink_bases(flink_snapshots):
    return dict(zip(FLINK, flink_snapshots("2.3.0", list(FLINK.values()))))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FLINK))
def test_expired_ttl_entries_go_and_everything_else_stays(spark, flink_bases, tmp_path, name):
    base = flink_bases[name].path
    before = tree_digest(base)
    table = keyed_of(base, "proc")
    now = midpoint(table, ["ttl_last_ttl_ts", "ttl_seen_ttl_ts"]) + 1000
    report = prune(spark, str(base), str(tmp_path / "out"), expired_at=now, ttl="1s")
    states = [s.name for s in load(str(base)).operator("proc").keyed.states]
    expected = pruned_rows(table, {"ttl_last": ("value", 1000), "ttl_seen": ("map", 1000)}, now, states)
    removed = {s.name: s.entries_removed for s in report.operators[0].states}
    assert removed["ttl_last"] == sum(expired(t, 1000, now) for t in table.column("ttl_last_ttl_ts").to_pylist())
    assert removed["ttl_seen"] == sum(expired(t, 1000, now) for m in table.column("ttl_seen_ttl_ts").to_pylist()
                                      for _, t in m or [])
    assert 0 < removed["ttl_last"] < table.num_rows and removed["ttl_seen"] > 0
    assert {k: v for k, v in removed.items() if k not in ("ttl_last", "ttl_seen")} == dict.fromkeys(
        set(removed) - {"ttl_last", "ttl_seen"}, 0)
    assert_only_changed(base, tmp_path / "out", {("proc", "keyed"): _rows(expected)})
    actions = {o.uid: o.action for o in report.write.operators}
    assert actions["proc"] == "pruned" and set(actions.values()) == {"pruned", "shallow copy"}
    assert tree_digest(base) == before


@pytest.mark.slow
def test_a_condition_removes_its_rows_and_their_timers(spark, flink_bases, tmp_path):
    base = flink_bases["2.3.0-hashmap-canonical"].path
    sp = load(str(base))
    table = keyed_of(base, "proc")
    keys = sorted(table.column("key").to_pylist())[:5]
    where = f"key IN ({', '.join(map(str, keys))})"
    report = prune(spark, str(base), str(tmp_path / "out"), operators=["proc"], where=where)
    from statectl.readers.resolve import TIMERS

    timers = local_table(sp, TableChoice(sp.operator("proc"), TIMERS), include_key_group=True)
    kept_timers = timers.filter(pa.compute.invert(pa.compute.is_in(timers.column("key"), pa.array(keys))))
    kept = table.filter(pa.compute.invert(pa.compute.is_in(table.column("key"), pa.array(keys))))
    assert_only_changed(base, tmp_path / "out", {("proc", "keyed"): _rows(kept),
                                                 ("proc", "timers"): _rows(kept_timers)})
    pruned = report.operators[0]
    assert pruned.rows_removed == 5 and pruned.timers_removed == timers.num_rows - kept_timers.num_rows > 0


@pytest.mark.slow
def test_the_sql_jobs_ttl_state(spark, tmp_path):
    """Every operator of the SQL job with table.exec.state.ttl (RowData keys and values) at once."""
    snap = flink_job.make_sql_snapshots("2.3.0", [flink_job.SQL_SHAPES["hashmap-canonical-ttl"]])[0]
    sp = load(str(snap.path))
    ops = [op for op in sp.operators if op.keyed is not None and any(s.ttl for s in op.keyed.states)]
    tables = {op.label: keyed_of(snap.path, op.label) for op in ops}
    ttls = {op.label: {s.name: (str(s.kind) if str(s.kind) in ("list", "map") else "value", 1000)
                       for s in op.keyed.states if s.ttl} for op in ops}
    first = ops[0].label
    now = midpoint(tables[first], [f"{n}_ttl_ts" for n in ttls[first]]) + 1000
    report = prune(spark, str(snap.path), str(tmp_path / "out"), expired_at=now, ttl="1s")
    assert sorted(o.operator_id for o in report.operators) == sorted(op.operator_id for op in ops)
    changed = {(op.label, "keyed"): _rows(pruned_rows(tables[op.label], ttls[op.label], now,
                                                      [s.name for s in op.keyed.states])) for op in ops}
    assert len(changed[(first, "keyed")]) < tables[first].num_rows
    assert_only_changed(snap.path, tmp_path / "out", changed)


@pytest.fixture(scope="module")
def ttl_base(spark, tmp_path_factory):
    """A Flink savepoint bootstrapped with TTL value, list and map states (null, far-future and
    clamped timestamps among them) and event-time timers."""
    from statectl.writers import KeyedData, ListState, MapState, OperatorData, SavepointWriter, Timers, ValueState
    from statectl.writers.flink.binding import parse_binding

    stamps = [100, 200, 300, LONG_MAX - 5, 1, 250]
    values = spark.createDataFrame([(k, f"v{k}", stamps[k % 6]) for k in range(12)], "k long, v string, v_ts long")
    lists = spark.createDataFrame([(k, i, f"e{k}.{i}", stamps[(k + i) % 6]) for k in range(12) for i in range(k % 4)],
                                  "k long, pos int, e string, e_ts long")
    maps = spark.createDataFrame([(k, f"m{i}", k * 10 + i, stamps[(k * i) % 6]) for k in range(0, 12, 2) for i in range(3)],
                                 "k long, mk string, mv long, mv_ts long")
    timers = spark.createDataFrame([(k, 1000 + k) for k in range(0, 12, 3)], "k long, ts long")
    binding = parse_binding({"key": "Long", "states": {"last": {"type": "String", "ttl": True},
                                                       "hist": {"type": "String", "ttl": True},
                                                       "seen": {"type": "Long", "ttl": True, "key": "String"}}}, "flink")
    keyed = KeyedData(["k"], (ValueState("last", "v", values, ttl_column="v_ts"),
                              ListState("hist", "e", lists, order_by="pos", ttl_column="e_ts"),
                              MapState("seen", "mk", "mv", maps, ttl_column="mv_ts")),
                      timers=(Timers("event", "ts", timers),))
    path = tmp_path_factory.mktemp("ttl") / "sp"
    writer = SavepointWriter.new(max_parallelism=32, format="flink")
    writer.with_operator(OperatorData("proc", 2, 32, keyed, flink=binding)).write(str(path), spark)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("ttl, now", [(100, 300), (50, 240), (1, 0), (10, LONG_MAX)])
def test_value_list_and_map_states_by_flinks_rule(spark, ttl_base, tmp_path, ttl, now):
    table = keyed_of(ttl_base, "proc")
    assert table.column("hist_ttl_ts").null_count < table.num_rows
    out = tmp_path / "out"
    report = prune(spark, str(ttl_base), str(out), expired_at=now, ttl=[f"{ttl}ms"])
    kinds = {"last": "value", "hist": "list", "seen": "map"}
    expected = pruned_rows(table, {n: (k, ttl) for n, k in kinds.items()}, now, list(kinds))
    assert_only_changed(ttl_base, out, {("proc", "keyed"): _rows(expected)})
    assert report.operators[0].rows_removed == table.num_rows - expected.num_rows


def test_per_state_ttls(spark, ttl_base, tmp_path):
    table = keyed_of(ttl_base, "proc")
    plan = Prune.of(str(ttl_base), expired_at="1970-01-01T00:00:00.260Z", ttl=["1ms", "hist=1000d"])
    assert plan.choices[0].prune.expiry.now == 260
    plan.write(spark, str(tmp_path / "out"))
    expected = pruned_rows(table, {"last": ("value", 1), "hist": ("list", 1000 * 86_400_000), "seen": ("map", 1)},
                           260, ["last", "hist", "seen"])
    assert _rows(keyed_of(tmp_path / "out", "proc")) == _rows(expected)


def test_refusals_before_spark(ttl_base):
    with pytest.raises(UsageError) as e:
        Prune.of(str(ttl_base), expired_at=5, ttl=["hist=1s"])
    assert str(e.value) == ("operator proc, state 'last' has a TTL, which a savepoint does not record: give it "
                            "with --ttl last=DURATION (or --ttl DURATION for every TTL state)")
    with pytest.raises(UsageError, match=r"^--ttl nope=\.\.\.: no TTL state 'nope' to prune; TTL states: hist, last, seen$"):
        Prune.of(str(ttl_base), expired_at=5, ttl=["1s", "nope=1s"])
    with pytest.raises(UsageError, match="^give either --expired-at TIME"):
        Prune.of(str(ttl_base))
    with pytest.raises(UsageError, match="^give either --expired-at TIME"):
        Prune.of(str(ttl_base), expired_at=5, ttl="1s", where="k = 1")
    with pytest.raises(UsageError, match="^--ttl goes with --expired-at, not with --where$"):
        Prune.of(str(ttl_base), ttl="1s", where="k = 1")


@pytest.fixture(scope="module")
def own_bases(tmp_path_factory):
    out = {}
    for fmt in ("canonical", "rocksdb"):
        path = tmp_path_factory.mktemp(f"own-{fmt}") / "sp"
        result = statectl("bootstrap", "--spec", str(SPEC), "--format", fmt, str(path))
        assert result.returncode == 0, result.stderr
        out[fmt] = path
    return out


@pytest.mark.parametrize("fmt", ["canonical", "rocksdb"])
def test_own_formats_by_a_condition(spark, own_bases, tmp_path, fmt):
    base = own_bases[fmt]
    before = tree_digest(base)
    sp = load(str(base))
    from statectl.readers.resolve import TIMERS

    table = keyed_of(base, "proc")
    timers = local_table(sp, TableChoice(sp.operator("proc"), TIMERS), include_key_group=True)
    users = sorted(set(timers.column("user").to_pylist()))[:2]
    where = " OR ".join(f"user = '{u}'" for u in users)
    report = prune(spark, str(base), str(tmp_path / "out"), where=where)
    keep_rows = pa.compute.invert(pa.compute.is_in(table.column("user"), pa.array(users)))
    keep_timers = pa.compute.invert(pa.compute.is_in(timers.column("user"), pa.array(users)))
    assert_only_changed(base, tmp_path / "out", {("proc", "keyed"): _rows(table.filter(keep_rows)),
                                                 ("proc", "timers"): _rows(timers.filter(keep_timers))})
    pruned = report.operators[0]
    assert pruned.rows_removed == 2 and pruned.timers_removed == timers.num_rows - timers.filter(keep_timers).num_rows
    events = table.filter(pa.compute.invert(keep_rows)).column("events").to_pylist()
    assert {s.name: s.entries_removed for s in pruned.states}["events"] == sum(len(e or []) for e in events)
    assert tree_digest(base) == before
    assert load(str(tmp_path / "out")).operator("proc").format == fmt  # the base's format kept


def test_own_formats_hold_no_ttl_state(own_bases):
    with pytest.raises(UnknownStateError, match=r"has no TTL state to prune$"):
        Prune.of(str(own_bases["canonical"]), expired_at=5, ttl="1s")
    with pytest.raises(UnknownStateError, match=r"^operator src has no keyed state to prune$"):
        Prune.of(str(own_bases["canonical"]), operators=["src"], where="true")


def test_a_condition_spark_cannot_resolve_is_one_line(spark, own_bases, tmp_path):
    with pytest.raises(UsageError, match=r"^--where 'nope = 1': .*nope"):
        prune(spark, str(own_bases["canonical"]), str(tmp_path / "out"), where="nope = 1")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_report_as_json(spark, own_bases, tmp_path):
    result = statectl("prune", str(own_bases["canonical"]), str(tmp_path / "out"), "--where", "user = 'alice'",
                      "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    [pruned] = doc["pruned"]
    assert set(pruned) == {"uid", "operator_id", "rows_removed", "timers_removed", "keyed_bytes_before",
                           "keyed_bytes_after", "states"}
    assert pruned["uid"] == "proc" and [s["name"] for s in pruned["states"]] == \
        [s.name for s in load(str(own_bases["canonical"])).operator("proc").keyed.states]
