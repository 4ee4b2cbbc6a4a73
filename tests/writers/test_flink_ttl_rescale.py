"""A rescale keeps every TTL timestamp: savepoints of the suite's Flink 2.3 job (a one-day TTL
`ValueState<String>` ttl_last and `MapState<String, Long>` ttl_seen; hashmap and RocksDB,
canonical and native) rescaled 128 -> 256 hold exactly the base's last-access timestamps, read
by statectl and read back by Flink itself (declared mode reads them through Flink's
TtlSerializer), where a write stamping its own time would put them after the job ran."""

from __future__ import annotations

import copy

import pytest

from support import flink_job
from support.cli_runner import statectl
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint

VERSION = "2.3.0"
SHAPES = {f"{b}-{f}": dict(backend=b, format=f) for b in ("hashmap", "rocksdb") for f in ("canonical", "native")}
NEW_MAX_P = 256


@pytest.fixture(scope="module")
def cases(flink_snapshots, tmp_path_factory):
    snaps = dict(zip(SHAPES, flink_snapshots(VERSION, list(SHAPES.values()))))
    out = {}
    for name, snap in snaps.items():
        target = tmp_path_factory.mktemp(name) / "rescaled"
        result = statectl("rescale", str(snap.path), str(target), "--max-parallelism", str(NEW_MAX_P))
        assert result.returncode == 0, result.stderr
        out[name] = (snap, target)
    return out


def ttl_rows(path) -> list[tuple]:
    """(key, ttl_last's timestamp, ttl_seen's {map key: timestamp}) of every key of proc."""
    table = keyed_table(open_flink_savepoint(path).operator("proc"))
    rows = table.select(["key", "ttl_last_ttl_ts", "ttl_seen_ttl_ts"]).to_pylist()
    return sorted((r["key"], r["ttl_last_ttl_ts"], sorted(r["ttl_seen_ttl_ts"] or [])) for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_statectl_reads_the_bases_timestamps_after_a_rescale(cases, name):
    snap, rescaled = cases[name]
    before, after = ttl_rows(snap.path), ttl_rows(rescaled)
    assert sum(1 for _, ts, _ in before if ts is not None) >= 20
    assert sum(len(seen) for _, _, seen in before) >= 40
    assert after == before
    assert open_flink_savepoint(rescaled).operator("proc").max_parallelism == NEW_MAX_P


def _description(expected: dict, max_p: int) -> dict:
    description = flink_job.job_description(expected)
    for op in description["operators"]:
        op["max_parallelism"] = max_p
    return description


@pytest.mark.slow
def test_flink_restores_the_bases_timestamps(cases):
    items = []
    for name, (snap, rescaled) in sorted(cases.items()):
        backend = SHAPES[name]["backend"]  # a native savepoint restores into the backend that wrote it
        items += [(snap.path, _description(snap.expected, 128), backend),
                  (rescaled, _description(snap.expected, NEW_MAX_P), backend)]
    dumps = flink_job.restore_declared_many(VERSION, items)
    for i, name in enumerate(sorted(cases)):
        base, rescaled = dumps[2 * i]["operators"]["proc"], dumps[2 * i + 1]["operators"]["proc"]
        for state in ("ttl_last", "ttl_seen"):
            stamps = base["keyed_state"][state]["last_access"]
            assert stamps, (name, state)
            assert rescaled["keyed_state"][state]["last_access"] == stamps, (name, state)
            assert rescaled["keyed_state"][state]["values"] == base["keyed_state"][state]["values"]
        # within the job's run, as the job's own expected.json bounds them
        expected = copy.deepcopy(cases[name][0].expected)
        assert flink_job.declared_mismatches(expected, dumps[2 * i + 1]) == [], name
