"""`rescale` of the suite's Flink SQL job (mode=sql; Flink 2.3 and 1.20, hashmap and RocksDB,
RocksDB native bases (SST files), and state with TTL, `table.exec.state.ttl`): every keyed SQL
operator (GROUP BY, deduplications, joins, windows, Top-N, OVER...) is written again at the new max
parallelism from its tables, its keys placed by Flink's hash of the key row, its header (the RowData
serializer snapshots) copied from the base. The job's savepoint made at max parallelism 256 is rescaled to
128 and back: each step holds the base's content row for row (every table, every column, RowKinds,
timers, TTL timestamps; `flink_sql_content`), a canonical base's entries byte for byte, `diff
--content-only` finds nothing, and the real SQL job restores each rescaled savepoint at its max
parallelism and, fed a second batch, makes the same net change to every statement's table as from
the savepoint it made itself at 128 (at 128, the same changes too, but for retract_agg's
order-dependent intermediate updates)."""

from __future__ import annotations

import pytest

from support import flink_job
from support.flink_sql_content import net_changes, raw_entries, restored_changes, savepoint_content, ttl_timestamps
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from support.cli_runner import statectl
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # Flink makes and restores the SQL job's savepoints; statectl runs Spark

# (release, SQL_SHAPES entry)
CASES = (("2.3.0", "hashmap-canonical"), ("2.3.0", "rocksdb-canonical"), ("2.3.0", "rocksdb-native"),
         ("2.3.0", "hashmap-canonical-ttl"), ("2.3.0", "rocksdb-canonical-ttl"),
         ("1.20.3", "hashmap-canonical"), ("1.20.3", "rocksdb-canonical"),
         ("1.20.3", "rocksdb-native"), ("1.20.3", "rocksdb-canonical-ttl"))
JOB_MAX_PARALLELISM = 128  # the SQL job's default
WIDE = 256


def _ok(result) -> None:
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def rescaled(tmp_path_factory):
    """Per (version, shape): the job's own savepoint at 128, its savepoint at 256, that one
    rescaled to 128 (down) and back to 256 (up)."""
    out = {}
    for version in dict(CASES):
        shapes = [s for v, s in CASES if v == version]
        specs = [flink_job.SQL_SHAPES[s] for s in shapes]
        try:
            snaps = flink_job.make_sql_snapshots(version, specs + [dict(s, max_parallelism=WIDE) for s in specs])
        except flink_job.FlinkSetupError as e:
            pytest.fail(str(e), pytrace=False)
        out.update({(version, s): (mine, base) for s, mine, base in zip(shapes, snaps, snaps[len(shapes):])})
    return {case: _rescaled(tmp_path_factory, case, *snaps) for case, snaps in out.items()}


def _rescaled(tmp_path_factory, case, mine, base) -> dict:
    work = tmp_path_factory.mktemp(f"sql-rescale-{'-'.join(case)}")
    before = digest(base.path)
    _ok(statectl("rescale", str(base.path), str(work / "down"), "--max-parallelism", str(JOB_MAX_PARALLELISM)))
    _ok(statectl("rescale", str(work / "down"), str(work / "up"), "--max-parallelism", str(WIDE)))
    assert digest(base.path) == before
    return dict(own=mine.path, base=base.path, down=work / "down", up=work / "up")


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_every_operator_is_at_the_new_max_parallelism(rescaled, case):
    paths = rescaled[case]
    for name, limit in (("down", JOB_MAX_PARALLELISM), ("up", WIDE)):
        operators = open_flink_savepoint(str(paths[name])).metadata.operators
        assert {op.max_parallelism for op in operators} == {limit}, name
    keyed = [op for op in open_flink_savepoint(str(paths["down"])).operators if op.keyed_header is not None]
    assert len(keyed) == 11
    # a native base's operators are written native (restored so below), a canonical one's canonical
    want = "rocksdb-native" if "native" in case[1] else "canonical"
    for name in ("down", "up"):
        layouts = {op.keyed_layout for op in open_flink_savepoint(str(paths[name])).operators
                   if op.keyed_header is not None}
        assert layouts == {want}, (name, layouts)


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_there_and_back_holds_the_bases_content_row_for_row(rescaled, case):
    paths = rescaled[case]
    base = savepoint_content(paths["base"])
    assert sum(len(rows) for tables in base.values() for rows in tables.values()) > 500
    assert savepoint_content(paths["down"]) == base
    assert savepoint_content(paths["up"]) == base
    if not case[1].endswith("-ttl"):
        # the job's own savepoint at 128 holds the same state as the one made at 256 (with TTL, the
        # wall clock's last-access timestamps and the OVER aggregate's cleanup times differ)
        assert _unmatched_flags_masked(savepoint_content(paths["own"])) == _unmatched_flags_masked(base)


INTERVAL_JOIN_CACHES = ("IntervalJoinLeftCache", "IntervalJoinRightCache")


def _unmatched_flags_masked(content: dict) -> dict:
    """*content* with the interval join's "has met a row of the other side" flags left out: each
    cached row carries one, and whether it is set when the savepoint is taken depends on how the
    job's two inputs interleaved in that run (seen: 4 rows of 30 set in one run, not in the other)."""
    import json

    def masked(row: str) -> str:
        value = json.loads(row)
        for name in INTERVAL_JOIN_CACHES:
            for _, cached in (value.get(name) or []) if isinstance(value, dict) else []:
                for entry in cached or []:
                    entry["f1"] = None
        return json.dumps(value, sort_keys=True)

    return {op: {table: sorted(map(masked, rows)) for table, rows in tables.items()}
            for op, tables in content.items()}


@pytest.mark.parametrize("case", [c for c in CASES if "canonical" in c[1]], ids="-".join)
def test_there_and_back_keeps_every_entry_byte_for_byte(rescaled, case):
    """Keys (without their key-group prefix), namespaces, user keys, timers and values (with their
    RowKinds and, for TTL state, their last-access timestamps) are the bytes Flink wrote."""
    paths = rescaled[case]
    base = raw_entries(paths["base"])
    assert sum(len(entries) for states in base.values() for entries in states.values()) > 1000
    assert raw_entries(paths["down"]) == base
    assert raw_entries(paths["up"]) == base


@pytest.mark.parametrize("case", [c for c in CASES if c[1].endswith("-ttl")], ids="-".join)
def test_every_ttl_timestamp_is_kept(rescaled, case):
    """The GROUP BYs, deduplications, Top-N and the regular join keep their state in TTL: each value's
    (each map entry's) last-access timestamp reads back as it was."""
    paths = rescaled[case]
    base = ttl_timestamps(paths["base"])
    assert sum(len(ts) for states in base.values() for ts in states.values()) > 200
    assert len(base) == 7  # the SQL operators with TTL state
    assert ttl_timestamps(paths["down"]) == base
    assert ttl_timestamps(paths["up"]) == base


def test_diff_content_only_finds_nothing(rescaled):
    paths = rescaled[CASES[0]]
    result = statectl("diff", "--content-only", str(paths["base"]), str(paths["down"]))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", flink_job.SQL_VERSIONS)
def test_the_sql_job_restores_the_rescaled_savepoints(rescaled, version):
    """Fed a second batch (mode=sql-restore), the job restored from the rescaled savepoints (down at
    128, up at 256) emits what it emits from its own savepoint at 128, and group_agg what the model
    of the saved totals says. The restored job takes over its savepoint's TTL."""
    shapes = [s for v, s in CASES if v == version]
    items = [(rescaled[version, s][name], flink_job.sql_shape_knobs(s, max_parallelism=limit)) for s in shapes
             for name, limit in (("own", JOB_MAX_PARALLELISM), ("down", JOB_MAX_PARALLELISM), ("up", WIDE))]
    dumps = flink_job.restore_sqls(version, items)
    for i, shape in enumerate(shapes):
        own, down, up = (restored_changes(d) for d in dumps[3 * i:3 * i + 3])
        # retract_agg's intermediate updates differ from run to run (see net_changes)
        assert net_changes(down) == net_changes(own) and net_changes(up) == net_changes(own), (version, shape)
        assert {s: rows for s, rows in down.items() if s != "retract_agg"} == \
            {s: rows for s, rows in own.items() if s != "retract_agg"}, (version, shape)
        assert own["group_agg"] == flink_job.sorted_rows(dumps[3 * i]["model_after_restore"]["group_agg"])
