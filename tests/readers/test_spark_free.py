"""`open_savepoint(path)` without a session: every table as a `pyarrow.Table`, read in this
process, with exactly the rows (and columns, and types) `open_savepoint(path, spark=spark)`
gives, for every table of every operator of every fixture savepoint; the same errors for
what cannot be read; Spark SQL refused in one line; and no JVM, not even `pyspark` imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from support.readers_savepoints import PROC_ROWS, build_derived, build_own_family
from statectl import (
    LocalSavepointReader,
    OperatorRef,
    SavepointReader,
    SparkRequiredError,
    StatectlError,
    open_savepoint,
)
from statectl.statefmt.model import KEYED_PART

TESTS = Path(__file__).parents[1]
FIXTURES = TESTS / "fixtures"
EXAMPLES = TESTS.parent / "examples"
FLINK = (sorted(FIXTURES.glob("flink-dev/*/savepoint"))
         + sorted(p for p in FIXTURES.glob("flink-sql-probe/*") if p.is_dir())
         + [EXAMPLES / "flink" / "savepoint", EXAMPLES / "flink-sql" / "savepoint"])


def _name(path: Path) -> str:
    return "/".join(path.parts[-3:-1] if path.name == "savepoint" else path.parts[-2:])


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """statectl's own savepoints: canonical with every kind of state, a shallow copy of it, and
    the RocksDB native format (two subtasks' databases)."""
    root = tmp_path_factory.mktemp("own")
    own = build_own_family(root)
    derived = build_derived(own["canonical"], root / "derived")
    return {"canonical": own["canonical"].location, "derived": derived.location, "native": own["native"].location}


def rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in table.to_pylist())


def reads(sp) -> list[tuple[str, object]]:
    """(what, how to read it from a reader) for every table of every operator, and the catalogue."""
    out = [("catalogue", lambda r: r.catalogue())]
    for op in sp.operators:
        ref = OperatorRef(operator_id=op.operator_id)
        if op.keyed is not None or op.unreadable_part(KEYED_PART) is not None:
            out.append((f"{op.label} keyed", lambda r, ref=ref: r.keyed(ref)))
            out.append((f"{op.label} timers", lambda r, ref=ref: r.timers(ref)))
        for s in op.operator_states:
            out.append((f"{op.label} {s.name}", lambda r, ref=ref, n=s.name: r.operator_state(ref, n)))
    return out


def outcome(read, reader):
    """The table a read gives, or the StatectlError it raises (class and message)."""
    try:
        return read(reader)
    except StatectlError as e:
        return type(e).__name__, str(e)


def assert_same(local, remote, what: str) -> int:
    """*local* (an Arrow table or an error) is *remote* (a DataFrame or the same error)."""
    if isinstance(remote, tuple):
        assert local == remote, what
        return 0
    assert isinstance(local, pa.Table), (what, local)
    want = remote.toArrow()
    assert local.column_names == want.column_names, what
    assert local.schema.types == want.schema.types, what
    assert rows(local) == rows(want), what
    return want.num_rows


def assert_every_table_alike(spark, path) -> tuple[int, int]:
    """(tables, rows) read both ways, every table of *path* compared."""
    local, remote = open_savepoint(path), open_savepoint(path, spark=spark)
    assert isinstance(local, LocalSavepointReader) and isinstance(remote, SavepointReader)
    total = tables = 0
    for what, read in reads(local.savepoint):
        total += assert_same(outcome(read, local), outcome(read, remote), f"{path}: {what}")
        tables += 1
    return tables, total


def test_every_table_of_statectls_own_savepoints(spark, own):
    for name, path in own.items():
        tables, total = assert_every_table_alike(spark, path)
        assert tables >= 3 and total > 10, name


@pytest.mark.slow
@pytest.mark.parametrize("path", FLINK, ids=_name)
def test_every_table_of_the_flink_fixtures(spark, path):
    tables, total = assert_every_table_alike(spark, str(path))
    assert tables > 1 and total > 0


def test_every_argument_of_a_read(spark, own):
    """Chosen states, keys, a key-group range with its column, explode, a timer domain, each
    kind of operator state, a table choice: the rows Spark gives."""
    path = own["canonical"]
    local, remote = open_savepoint(path), open_savepoint(spark, path)  # the earlier form too
    reads = {
        "states": lambda r: r.keyed("proc", states=["count", "total"]),
        "one state": lambda r: r.keyed("proc", "events"),
        "keys": lambda r: r.keyed("proc", keys=["u0", "u2", "nobody"]),
        "keys once": lambda r: r.keyed("proc", keys=(k for k in ["u0", "u2"])),  # a generator
        "tuple keys": lambda r: r.keyed("win", keys=[("a", 1), ("b", 2)]),
        "key groups": lambda r: r.keyed("proc", key_groups=(0, 3), include_key_group=True),
        "explode list": lambda r: r.keyed("proc", "events", explode=True),
        "explode map": lambda r: r.keyed("proc", "attrs", explode=True),
        "event timers": lambda r: r.timers("proc", "event"),
        "timers of keys": lambda r: r.timers("win", keys=[("a", 1)], include_key_group=True),
        "list": lambda r: r.list_state("src", "offsets"),
        "union": lambda r: r.union_state("src", "partitions"),
        "broadcast": lambda r: r.broadcast_state("rules", "rules"),
        "choice": lambda r: r.table(r.choose("proc", ["seen"])),
    }
    counts = {what: assert_same(read(local), read(remote), what) for what, read in reads.items()}
    assert counts == {"states": 6, "one state": 4, "keys": 2, "keys once": 2, "tuple keys": 2, "key groups": counts["key groups"],
                      "explode list": 5, "explode map": 4, "event timers": 2, "timers of keys": 1,
                      "list": 3, "union": 4, "broadcast": 2, "choice": 3}
    in_range = local.keyed("proc", key_groups=(0, 3), include_key_group=True)
    assert 0 < in_range.num_rows < len(PROC_ROWS)
    assert set(in_range.column("_key_group").to_pylist()) <= {0, 1, 2, 3}


def test_a_local_read_is_pyarrow_and_pandas(own):
    sp = open_savepoint(own["canonical"])
    table = sp.keyed("proc", states=["count"])
    assert isinstance(table, pa.Table)
    frame = table.to_pandas().sort_values("user")
    assert list(frame.columns) == ["user", "count"]
    assert frame["count"].tolist() == [3, 7, 0, 12]


@pytest.mark.parametrize("call, message", [
    (lambda r: r.sql("SELECT * FROM proc"),
     "sql runs Spark SQL: open the savepoint with a session, open_savepoint(path, spark=spark)"),
    (lambda r: r.register_views(),
     "register_views runs Spark SQL: open the savepoint with a session, open_savepoint(path, spark=spark)"),
])
def test_spark_sql_needs_a_session(own, call, message):
    with pytest.raises(SparkRequiredError) as e:
        call(open_savepoint(own["canonical"]))
    assert str(e.value) == message and isinstance(e.value, StatectlError)


@pytest.mark.parametrize("call, error, message", [
    (lambda r: r.keyed("nope"), "UnknownOperatorError", None),
    (lambda r: r.keyed("proc", states=["cnt"]), "UnknownStateError",
     "operator proc has no keyed state 'cnt'; it has keyed states: count, events, attrs, total, acc, seen"),
    (lambda r: r.keyed("src"), "UnknownStateError",
     "operator src has no keyed state; it has operator states: offsets (list), partitions (union)"),
    (lambda r: r.timers("proc", "wall"), "UsageError",
     "timer domain must be one of event, processing, got 'wall'"),
    (lambda r: r.union_state("src", "offsets"), "UnknownStateError",
     "operator state 'offsets' of src is list state, not union state"),
    (lambda r: r.keyed("proc", key_groups=(3, 1)), "UsageError",
     "key_groups must be (first, last) with 0 <= first <= last, got (3, 1)"),
    (lambda r: r.keyed("proc", "count", explode=True), "UsageError",
     "--explode flattens a list or map state; 'count' is a value state"),
])
def test_bad_reads_fail_alike_in_one_line(spark, own, call, error, message):
    path = own["canonical"]
    local, remote = outcome(call, open_savepoint(path)), outcome(call, open_savepoint(path, spark=spark))
    assert local == remote and local[0] == error
    assert message is None or local[1] == message


def test_every_form_of_open_savepoint(spark, own):
    """The session first (positional or keywords, as before), as the keyword `spark=`, or none;
    a path, a path-like or a loaded savepoint."""
    path = own["canonical"]
    with_spark = [open_savepoint(spark, path), open_savepoint(spark, location=path),
                  open_savepoint(spark=spark, location=path), open_savepoint(path, spark=spark)]
    without = [open_savepoint(path), open_savepoint(Path(path)), open_savepoint(location=path),
               open_savepoint(with_spark[0].savepoint), open_savepoint(None, path)]
    assert all(type(r) is SavepointReader and r.spark is spark for r in with_spark)
    assert all(type(r) is LocalSavepointReader for r in without)
    assert {r.savepoint.savepoint_id for r in with_spark + without} == {with_spark[0].savepoint.savepoint_id}


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {}, "open_savepoint: expected a savepoint's path, URI or Savepoint, got NoneType"),
    ((42,), {}, "open_savepoint: expected a savepoint's path, URI or Savepoint, got int"),
    ((object(), object()), {}, "open_savepoint: expected a savepoint's path, URI or Savepoint, got object"),
    (("a", "b"), {"spark": object()}, "open_savepoint: give the session once, as open_savepoint(path, spark=spark)"),
])
def test_open_savepoint_refuses_what_is_no_savepoint(args, kwargs, message):
    with pytest.raises(StatectlError) as e:
        open_savepoint(*args, **kwargs)
    assert str(e.value).startswith(message)


SCRIPT = textwrap.dedent("""
    import json, shutil, sys
    from statectl import OperatorRef, open_savepoint

    sp = open_savepoint(sys.argv[1])
    out = {}
    for op in sp.savepoint.operators:
        ref = OperatorRef(operator_id=op.operator_id)
        if op.keyed is not None:
            out[op.label + " keyed"] = sp.keyed(ref).num_rows
            out[op.label + " timers"] = sp.timers(ref).num_rows
        for s in op.operator_states:
            out[op.label + " " + s.name] = sp.operator_state(ref, s.name).num_rows
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"pyspark", "py4j"})
    print(json.dumps({"rows": out, "heavy": heavy, "java": shutil.which("java")}))
""")


@pytest.mark.parametrize("path", [FIXTURES / "flink-dev" / "long-rocksdb-native" / "savepoint",
                                  EXAMPLES / "flink-sql" / "savepoint"], ids=_name)
def test_no_jvm_is_started(spark, tmp_path, path):
    """A process without java (no JAVA_HOME, an empty PATH) reads every table, imports neither
    pyspark nor py4j, and counts the rows Spark counts."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "PYSPARK_PYTHON")}
    env["PATH"] = str(empty)
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["heavy"] == [] and found["java"] is None
    remote = open_savepoint(str(path), spark=spark)
    want = {}
    for op in remote.savepoint.operators:
        ref = OperatorRef(operator_id=op.operator_id)
        if op.keyed is not None:
            want[op.label + " keyed"] = remote.keyed(ref).count()
            want[op.label + " timers"] = remote.timers(ref).count()
        for s in op.operator_states:
            want[op.label + " " + s.name] = remote.operator_state(ref, s.name).count()
    assert found["rows"] == want and sum(want.values()) > 0
