"""Real Flink restores a pruned savepoint with exactly the live TTL entries: savepoints of the
suite's Flink job (a one-day TTL `ValueState<String>` ttl_last and `MapState<String, Long>`
ttl_seen) pruned at the median last access + 1 s with a TTL of 1 s, restored by Flink 2.3
(hashmap from a canonical base, RocksDB from a native one) and Flink 1.20 (RocksDB from a
hashmap canonical base) in declared mode, which reads every key's state through Flink's own
serializers: each TTL state holds exactly the base's entries statectl's decoded read says are
live (values and last-access timestamps), every other state and every timer what the base's
restore holds. One JVM per release."""

from __future__ import annotations

import statistics

import pytest

from support import flink_job
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint
from statectl.writers.prune import prune

pytestmark = pytest.mark.slow  # real Flink restores

CASES = {  # name: (version, shape of the base, backend restored into)
    "2.3.0-hashmap-canonical": ("2.3.0", dict(backend="hashmap", format="canonical"), "hashmap"),
    "2.3.0-rocksdb-native": ("2.3.0", dict(backend="rocksdb", format="native"), "rocksdb"),
    "1.20.3-hashmap-canonical": ("1.20.3", dict(backend="hashmap", format="canonical"), "rocksdb"),
}
TTL_MS = 1000
LONG_MAX = 2**63 - 1


def live(ts: int, now: int) -> bool:
    """Not expired at *now* by Flink's rule (last access + TTL, clamped, > now)."""
    return ts + (min(TTL_MS, LONG_MAX - ts) if ts > 0 else TTL_MS) > now


def _proc(path):
    """The job's keyed operator holding the TTL states (by uid, or by its operator id in 1.x)."""
    fsp = open_flink_savepoint(path)
    return fsp.operator(flink_job.operator_id("proc")["operator_id"])


def median_access(path) -> int:
    table = keyed_table(_proc(path))
    stamps = [t for t in table.column("ttl_last_ttl_ts").to_pylist() if t is not None]
    stamps += [t for m in table.column("ttl_seen_ttl_ts").to_pylist() for _, t in m or []]
    return int(statistics.median(stamps))


@pytest.fixture(scope="module")
def pruned(spark, flink_snapshots, tmp_path_factory):
    """{case: (base Snapshot, pruned output, its time, backend)}."""
    out = {}
    for name, (version, shape, backend) in CASES.items():
        snap = flink_snapshots(version, [shape])[0]
        now = median_access(snap.path) + TTL_MS
        target = tmp_path_factory.mktemp(name) / "pruned"
        prune(spark, str(snap.path), str(target), expired_at=now, ttl=f"{TTL_MS}ms")
        out[name] = (snap, target, now, backend)
    return out


@pytest.fixture(scope="module")
def dumps(pruned):
    """{case: (the base's restore dump, the pruned savepoint's)}, one JVM per release."""
    out = {}
    for version in sorted({v for v, _, _ in CASES.values()}):
        names = [n for n, (v, _, _) in CASES.items() if v == version]
        items = []
        for name in names:
            snap, target, _, backend = pruned[name]
            description = flink_job.job_description(snap.expected)
            items += [(snap.path, description, backend), (target, description, backend)]
        restored = flink_job.restore_declared_many(version, items)
        for i, name in enumerate(names):
            out[name] = (restored[2 * i]["operators"]["proc"], restored[2 * i + 1]["operators"]["proc"])
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_pruned_savepoint_keeps_the_bases_layout(pruned, name):
    """A native base's pruned operator is native again (restored so by its backend below)."""
    _, target, _, _ = pruned[name]
    assert _proc(target).keyed_layout == ("rocksdb-native" if name.endswith("-native") else "canonical")


@pytest.mark.parametrize("name", sorted(CASES))
def test_flink_restores_exactly_the_live_ttl_entries(pruned, dumps, name):
    snap, _, now, _ = pruned[name]
    base, after = dumps[name]
    expected = _expected(snap.path, now)
    for state, (values, stamps) in expected.items():
        got = after["keyed_state"][state]
        assert got["values"] == values, (name, state)
        assert got["last_access"] == stamps, (name, state)
        assert 0 < len(values) < len(base["keyed_state"][state]["values"]) or \
            sum(map(len, values.values())) < sum(map(len, base["keyed_state"][state]["values"].values()))


def _expected(path, now: int) -> dict:
    """{state: (values, last_access)} of proc's TTL states as declared mode dumps them, the
    expired entries left out (a map left empty: the key has no entry)."""
    table = keyed_table(_proc(path))
    last, last_at, seen, seen_at = {}, {}, {}, {}
    for row in table.select(["key", "ttl_last", "ttl_last_ttl_ts", "ttl_seen", "ttl_seen_ttl_ts"]).to_pylist():
        key = str(row["key"])
        if row["ttl_last"] is not None and live(row["ttl_last_ttl_ts"], now):
            last[key], last_at[key] = row["ttl_last"], row["ttl_last_ttl_ts"]
        entries = {k: (v, t) for (k, v), (_, t) in zip(row["ttl_seen"] or [], row["ttl_seen_ttl_ts"] or [])
                   if live(t, now)}
        if entries:
            seen[key] = {k: v for k, (v, _) in entries.items()}
            seen_at[key] = {k: t for k, (_, t) in entries.items()}
    return {"ttl_last": (last, last_at), "ttl_seen": (seen, seen_at)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_other_state_and_timer_restores_as_the_base(dumps, name):
    base, after = dumps[name]
    others = set(base["keyed_state"]) - {"ttl_last", "ttl_seen"}
    assert others
    for state in others:
        assert after["keyed_state"][state] == base["keyed_state"][state], (name, state)
    assert after["timers"] == base["timers"]
