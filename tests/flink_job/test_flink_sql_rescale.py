"""`rescale` of the suite's Flink SQL job (mode=sql; 2.3 hashmap and RocksDB, 1.20 RocksDB): every
keyed SQL operator (GROUP BY, deduplications, joins, windows, Top-N, OVER...) is written again at the new
max parallelism from its tables, its keys placed by Flink's hash of the key row, its header (the
RowData serializer snapshots) copied from the base. The job's savepoint made at max parallelism
256 is rescaled to 128 and back: each step holds the base's content row for row (every table,
every column, RowKinds, timers; `flink_sql_content`), `diff --content-only` finds nothing, and
the real SQL job restores each rescaled savepoint at its max parallelism and, fed a second batch,
makes the same net change to every statement's table as from the savepoint it made itself at
128 (at 128, the same changes too, but for retract_agg's order-dependent intermediate updates)."""

from __future__ import annotations

import pytest

import flink_job
from flink_sql_content import net_changes, restored_changes, savepoint_content
from statectl.statefmt.flink.savepoint import open_flink_savepoint
from tests.cli_runner import statectl
from tests.writers.test_flink_modify import digest

pytestmark = pytest.mark.slow  # Flink makes and restores the SQL job's savepoints; statectl runs Spark

CASES = (("2.3.0", "hashmap"), ("2.3.0", "rocksdb"), ("1.20.3", "rocksdb"))
JOB_MAX_PARALLELISM = 128  # the SQL job's default
WIDE = 256


def _ok(result) -> None:
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def rescaled(tmp_path_factory):
    """Per (version, backend): the job's own savepoint at 128, its savepoint at 256, that one
    rescaled to 128 (down) and back to 256 (up)."""
    out = {}
    for version in dict(CASES):
        backends = [b for v, b in CASES if v == version]
        try:
            own = flink_job.make_sql_snapshots(version, [dict(backend=b, format="canonical") for b in backends])
            wide = flink_job.make_sql_snapshots(version, [dict(backend=b, format="canonical", max_parallelism=WIDE)
                                                          for b in backends])
        except flink_job.FlinkSetupError as e:
            pytest.fail(str(e), pytrace=False)
        out.update({(version, b): (mine, base) for b, mine, base in zip(backends, own, wide)})
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


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_there_and_back_holds_the_bases_content_row_for_row(rescaled, case):
    paths = rescaled[case]
    base = savepoint_content(paths["base"])
    assert sum(len(rows) for tables in base.values() for rows in tables.values()) > 500
    assert savepoint_content(paths["down"]) == base
    assert savepoint_content(paths["up"]) == base
    # the job's own savepoint at 128 holds the same state as the one made at 256
    assert savepoint_content(paths["own"]) == base


def test_diff_content_only_finds_nothing(rescaled):
    paths = rescaled[CASES[0]]
    result = statectl("diff", "--content-only", str(paths["base"]), str(paths["down"]))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_sql_job_restores_the_rescaled_savepoints(rescaled):
    """Fed a second batch (mode=sql-restore), the job restored from the rescaled savepoints (down at
    128, up at 256) emits what it emits from its own savepoint at 128, and group_agg what the model
    of the saved totals says."""
    for version in dict(CASES):
        backends = [b for v, b in CASES if v == version]
        items = [(rescaled[version, b][name], dict(backend=b, max_parallelism=limit)) for b in backends
                 for name, limit in (("own", JOB_MAX_PARALLELISM), ("down", JOB_MAX_PARALLELISM), ("up", WIDE))]
        dumps = flink_job.restore_sqls(version, items)
        for i, backend in enumerate(backends):
            own, down, up = (restored_changes(d) for d in dumps[3 * i:3 * i + 3])
            # retract_agg's intermediate updates differ from run to run (see net_changes)
            assert net_changes(down) == net_changes(own) and net_changes(up) == net_changes(own), (version, backend)
            assert {s: rows for s, rows in down.items() if s != "retract_agg"} == \
                {s: rows for s, rows in own.items() if s != "retract_agg"}, (version, backend)
            assert own["group_agg"] == flink_job.sorted_rows(dumps[3 * i]["model_after_restore"]["group_agg"])
