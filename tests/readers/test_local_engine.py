"""The local engine (no Spark) gives exactly the rows Spark gives, for every table of every
fixture: statectl's own canonical and RocksDB formats, the Flink dev fixtures, the Flink SQL
probes; with key filters, chosen states and limits; and `read` chooses it for small reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.readers_savepoints import build_own_family
from statectl.readers import SavepointReader
from statectl.readers.local import choose_engine, local_table
from statectl.readers.resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice
from statectl.statefmt.formats import load

FIXTURES = Path(__file__).parents[1] / "fixtures"
FLINK = sorted(FIXTURES.glob("flink-dev/*/savepoint")) + sorted(p for p in FIXTURES.glob("flink-sql-probe/*")
                                                                 if p.is_dir())


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """statectl's own savepoints: canonical (every kind of state) and RocksDB native."""
    own = build_own_family(tmp_path_factory.mktemp("own"))
    return [own["canonical"].location, own["native"].location]


def choices(sp):
    for op in sp.operators:
        if op.keyed is not None:
            yield TableChoice(op, KEYED)
            yield TableChoice(op, TIMERS)
        for s in op.operator_states:
            yield TableChoice(op, OPERATOR_STATE, (s.name,))


def rows(table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def assert_same(spark, sp, choice, limit=None):
    want = SavepointReader(spark, sp).table(choice).toArrow()
    got = local_table(sp, choice, limit)
    assert got.column_names == want.column_names, choice.description
    if limit is None:
        assert rows(got) == rows(want), choice.description
    else:
        assert got.num_rows == min(limit, want.num_rows)
        assert set(rows(got)) <= set(rows(want)), choice.description
    return want.num_rows


def test_every_table_of_statectls_own_formats(spark, own):
    total = 0
    for path in own:
        sp = load(path)
        for choice in choices(sp):
            total += assert_same(spark, sp, choice)
    assert total > 50


@pytest.mark.slow
@pytest.mark.parametrize("path", FLINK, ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_every_table_of_flink_savepoints(spark, path):
    sp = load(path)
    total = sum(assert_same(spark, sp, c) for c in choices(sp) if not c.operator.unreadable)
    assert total > 0


@pytest.mark.slow
def test_key_lookups_chosen_states_and_limits(spark, own):
    sp = load(FIXTURES / "flink-dev" / "long-rocksdb-native" / "savepoint")
    proc = sp.operator("lk-proc")
    keys = [r["key"] for r in SavepointReader(spark, sp).keyed("lk-proc").limit(3).collect()]
    for choice in (TableChoice(proc, KEYED, (), tuple((k,) for k in keys)),
                   TableChoice(proc, KEYED, ("count", "events")),
                   TableChoice(proc, TIMERS, (), ((keys[0],),))):
        assert_same(spark, sp, choice)
    assert assert_same(spark, sp, TableChoice(proc, KEYED), limit=5) > 5
    mine = load(own[0])
    assert_same(spark, mine, TableChoice(mine.operator("proc"), KEYED, (), (("alice",), ("nobody",))))


def test_key_groups_as_spark_gives_them(spark, own):
    """`include_key_group`: each row's `_key_group` first, Spark's own, in both kinds of table."""
    for sp in (load(own[1]), load(FIXTURES / "flink-dev" / "long-rocksdb-native" / "savepoint")):
        reader = SavepointReader(spark, sp)
        for op in (op for op in sp.operators if op.keyed is not None):
            for kind, frame in ((KEYED, reader.keyed), (TIMERS, reader.timers)):
                want = frame(op.label, include_key_group=True).toArrow()
                got = local_table(sp, TableChoice(op, kind), include_key_group=True)
                assert got.column_names == want.column_names and got.column_names[0] == "_key_group"
                assert rows(got) == rows(want), (op.label, kind)


def test_read_chooses_the_local_engine_for_small_reads(cli):
    path = str(FIXTURES / "flink-sql-probe" / "rocksdb-native")
    out = cli("read", path, "--name", "GroupAggregate[40]", "--key", "35", "-f", "jsonl", "--verbose")
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "engine: local (a key lookup reads only its keys' key groups)"
    assert out.stdout == '{"f0":35,"accState":{"f0":15,"f1":9498118,"f2":"fb566","_rowkind":null}}\n'
    forced = cli("read", path, "--name", "GroupAggregate[40]", "--key", "35", "-f", "jsonl", "--engine", "spark")
    assert forced.returncode == 0 and forced.stdout == out.stdout
    bad = cli("read", path, "--name", "GroupAggregate[40]", "--where", "f0 = 35", "--engine", "local")
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: --where is a Spark SQL condition: it needs --engine spark (or auto)"


def test_the_choice(own):
    sp = load(own[0])
    proc = sp.operator("proc")
    assert choose_engine(sp, TableChoice(proc, KEYED))[0] == "local"  # a small table
    assert choose_engine(sp, TableChoice(proc, KEYED), where="count > 1")[0] == "spark"
    assert choose_engine(sp, TableChoice(proc, KEYED), engine="spark") == ("spark", "--engine spark")
    assert choose_engine(sp, TableChoice(proc, KEYED), limit=3) == ("local", "--limit 3 stops after its rows")
    assert choose_engine(sp, TableChoice(proc, KEYED), master="local[1]")[0] == "spark"


def test_a_read_streams_its_batches(own, tmp_path, monkeypatch):
    """`read` without --where decodes in this process at any size, a batch at a time: the
    Parquet output is written while the splits are still being decoded."""
    import pyarrow.parquet as pq

    from statectl.cli import arrow_tables
    from statectl.readers import local

    sp = load(own[1])  # RocksDB native: one split per subtask
    choice = TableChoice(sp.operator("proc"), KEYED)
    decoded, written = [], []
    real = local._batches
    monkeypatch.setattr(local, "_batches", lambda *a: (decoded.append(1) or b for b in real(*a)))
    schema, batches = local.local_batches(sp, choice)
    assert decoded == []  # nothing decoded before the writer asks
    out = tmp_path / "out"
    seen = (written.append(len(decoded)) or b for b in batches)
    arrow_tables.write_batches(schema, seen, "parquet", str(out))
    assert written == list(range(1, len(decoded) + 1))  # each batch written before the next decodes
    got = pq.read_table(out)
    assert rows(got) == rows(local_table(sp, choice))
