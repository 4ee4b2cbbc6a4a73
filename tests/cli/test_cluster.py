"""statectl on a real Spark standalone cluster (tests/support/spark_cluster.py): every command through
the console script with ``--master spark://...``, each result equal to local mode's.

Executors are other JVMs and Pythons with their own working directory (the worker's) and their
own temporary directory: the cluster's commands name relative paths from a directory of their
own, so whatever only the driver has (its cwd, its temp folders) shows up as a failure. Few
commands, each doing much: a cluster command costs a driver JVM and two executors. The checks
chain: the derived savepoint's `sql` shows the rocksdb bootstrap's tables (shallow copies) as
local mode does, `diff` shows the canonical bootstrap and the rescaled rocksdb one hold the same.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support import REPO

from support.cli_runner import statectl, statectl_process
from support.s3_store import start_s3_store
from support.spark_cluster import free_port, spark_home
from support.temp_folders import statectl_entries

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

FLINK = REPO / "tests" / "fixtures" / "flink-dev"

# Every view of the derived savepoint, one JSON line each, in one query (one cluster application):
# the new keyed operator (spend), the replaced broadcast state (bcast.rules), and the rocksdb
# base's shallow-copied keyed table (every keyed state kind), timers and operator states.
EVERY_VIEW = " UNION ALL ".join(
    f"SELECT '{view}' AS view, to_json(struct(*)) AS row FROM `{view}`"
    for view in ("spend", "proc", "proc.timers", "src.offsets", "union-op.members", "bcast.rules")) + \
    " ORDER BY view, row"


def ok(result) -> str:
    assert result.returncode == 0, (result.args, result.stderr)
    return result.stdout


class Runs:
    """The same commands on the cluster (a process) and in local mode (in this process), each
    from a folder of its own with the same relative paths: ``examples/`` and the savepoints
    written below ``cl/``."""

    def __init__(self, cluster, root: Path):
        self.master, self.env = cluster.master_url, cluster.client_env
        self.cluster_dir, self.local_dir = root / "cluster", root / "local"
        self.tmp = root / "driver-tmp"  # the cluster commands' TMPDIR
        for d in (self.cluster_dir, self.local_dir, self.tmp):
            d.mkdir()
            if d is not self.tmp:
                (d / "examples").symlink_to(REPO / "examples")

    def cluster(self, *args: str, env: dict[str, str] | None = None):
        return statectl_process(*args, "--master", self.master, cwd=self.cluster_dir,
                                env={**self.env, "TMPDIR": str(self.tmp), **(env or {})})

    def local(self, *args: str):
        return statectl(*args, cwd=self.local_dir)

    def both(self, *args: str) -> tuple[str, str]:
        """Standard output of *args* on the cluster and locally (both must succeed)."""
        return ok(self.cluster(*args)), ok(self.local(*args))


@pytest.fixture(scope="module")
def runs(spark_cluster, tmp_path_factory):
    """The cluster's savepoints: bootstrap (canonical, rocksdb), bootstrap --base of the rocksdb
    one, rescale of it; local mode writes the two that `sql` compares, the same way."""
    r = Runs(spark_cluster, tmp_path_factory.mktemp("cluster"))
    for args in (("bootstrap", "--spec", "examples/spec.yaml", "cl/native", "--format", "rocksdb",
                  "--json"),
                 ("bootstrap", "--spec", "examples/new-state.yaml", "cl/v2", "--base", "cl/native",
                  "--json")):
        on_cluster, local = r.both(*args)
        assert _written(on_cluster) == _written(local)
    ok(r.cluster("bootstrap", "--spec", "examples/spec.yaml", "cl/canonical", "--json"))
    ok(r.cluster("rescale", "cl/native", "cl/rescaled", "--max-parallelism", "64", "--parallelism", "3",
                 "--json"))
    return r


def _written(stdout: str) -> list:
    """A write's JSON summary without what differs between two runs (ids, locations)."""
    doc = json.loads(stdout)
    return sorted((op["uid"], op.get("rows"), op.get("files"), op.get("states"))
                  for op in doc["operators"])


def test_sql_over_a_derived_savepoint_shows_every_state_kind_of_its_rocksdb_base(runs):
    """bootstrap --base of the rocksdb savepoint: the new operator, the replaced broadcast state,
    and the base's operators (shallow copies: every keyed state kind, timers, operator states
    read by the executors from its RocksDB files). `read` on the cluster: the README's lines."""
    on_cluster, local = runs.both("sql", "cl/v2", EVERY_VIEW, "-f", "jsonl")
    assert on_cluster == local
    lines = [json.loads(line) for line in on_cluster.splitlines()]
    views = [line["view"] for line in lines]
    assert {v: views.count(v) for v in set(views)} == {
        "spend": 20, "proc": 20, "proc.timers": 8, "src.offsets": 6, "union-op.members": 4, "bcast.rules": 3}
    columns = set().union(*(json.loads(line["row"]) for line in lines if line["view"] == "proc"))
    assert columns == {"user", "count", "events", "attrs", "total", "mean"}  # to_json leaves out nulls


def test_diff_of_a_rescaled_copy_finds_the_same_content(runs):
    """rescale of the rocksdb bootstrap on the cluster, compared with the canonical bootstrap by
    diff on the cluster."""
    result = runs.cluster("diff", "cl/canonical", "cl/rescaled", "--content-only", "--json")
    assert result.returncode == 0, (result.stdout, result.stderr)
    doc = json.loads(result.stdout)
    assert (doc["same_content"], doc["identical"]) == (True, False)  # only the layout moved
    assert sorted((c["what"], c["a"], c["b"]) for c in doc["changes"]) == \
        [("max_parallelism", 128, 64), ("parallelism", 2, 3)]
    assert doc["tables"] and all(
        (t["only_in_a"], t["only_in_b"], t["changed"]) == (0, 0, 0) for t in doc["tables"])


def test_a_flink_savepoint_on_s3_reads_the_same_with_the_drivers_s3_settings(runs, tmp_path_factory):
    """Flink's RocksDB native savepoint: the executors copy its SST files from the store. The
    workers were started without any AWS_* variable: the executors reach the store (endpoint,
    credentials) through the settings statectl hands them from the driver's."""
    store = start_s3_store(tmp_path_factory.mktemp("s3-store"))
    try:
        remote = store.upload(FLINK / "long-rocksdb-native" / "savepoint", "flink/native")
        on_cluster = ok(runs.cluster("read", remote, "--uid", "lk-proc", "--engine", "spark", "-f", "jsonl",
                                     env=store.env))
    finally:
        store.stop()
    local = ok(runs.local("read", str(FLINK / "long-rocksdb-native" / "savepoint"), "--uid", "lk-proc",
                          "-f", "jsonl"))
    assert sorted(on_cluster.splitlines()) == sorted(local.splitlines()) and len(local.splitlines()) == 30


def readme_cluster_commands() -> list[str]:
    """The shell lines of the README's "On a cluster" block (they name spark://127.0.0.1:7077)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"## On a cluster\n.*?```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_readme_cluster_lines_run_as_written(runs, spark_cluster, tmp_path):
    """Each line in a shell, from a folder holding the tour's savepoint (the one the cluster
    bootstrapped), with the master's URL put in; both exports (the CLI's, spark-submit's) hold
    the local read's rows."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "tmp").mkdir()
    shutil.copytree(runs.cluster_dir / "cl" / "canonical", tmp_path / "out" / "savepoint")
    python = os.path.dirname(sys.executable)  # `python` and `statectl` are this suite's
    env = {**os.environ, **spark_cluster.client_env,
           "PATH": f"{python}:{os.environ['PATH']}:{spark_home() / 'bin'}",
           "TMPDIR": str(tmp_path / "tmp"), "COLUMNS": "200"}
    printed = []
    for line in readme_cluster_commands():
        assert "spark://127.0.0.1:7077" in line
        done = subprocess.run(["bash", "-c", line.replace("spark://127.0.0.1:7077",
                                                          spark_cluster.master_url)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (line, done.stderr[-3000:])
        printed.append(done.stdout)
    assert printed[1] == "users\n20\n"
    local = json.loads("[" + ",".join(ok(statectl("read", "out/savepoint", "--uid", "proc",
                                                    "-f", "jsonl", cwd=tmp_path)).splitlines()) + "]")
    for export in ("exports/proc", "exports/proc-submitted"):
        rows = pq.read_table(tmp_path / export).to_pylist()
        assert sorted(r["user"] for r in rows) == sorted(r["user"] for r in local)
        assert sorted((r["user"], r["count"], r["events"]) for r in rows) == \
            sorted((r["user"], r["count"], r["events"]) for r in local)
    assert statectl_entries(tmp_path / "tmp") == []


# A Spark Connect endpoint whose Spark runs on the cluster, as platforms expose one: the warm
# engine's Connect settings (loopback, a port, the token from the environment) on a session
# whose master is the cluster's. Args: master URL, port, the file written once it serves.
CONNECT_ON_CLUSTER = """
import sys, time
from statectl.cli.engine_server import server_conf
from statectl.cli.spark import spark_session
spark = spark_session(sys.argv[1], app_name="statectl-connect-on-cluster", extra_conf=server_conf(int(sys.argv[2])))
open(sys.argv[3], "w").write("serving")
while True:
    time.sleep(1)
"""


def test_remote_runs_on_the_clusters_spark_connect_endpoint(runs, spark_cluster, tmp_path):
    """`sql --remote sc://host:port/;token=...` against a Connect server on the cluster answers
    as local mode does, and the cluster ran it (the server's application is the cluster's)."""
    port, token, ready = free_port(), secrets.token_hex(16), tmp_path / "serving"
    with open(tmp_path / "server.log", "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", CONNECT_ON_CLUSTER, spark_cluster.master_url, str(port), str(ready)],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **spark_cluster.client_env, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token})
    try:
        deadline = time.monotonic() + 180
        while not ready.exists():
            assert server.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "server.log").read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        savepoint = str(runs.cluster_dir / "cl" / "canonical")
        query = "SELECT user, count, events FROM proc ORDER BY user"
        remote = ok(statectl_process("sql", savepoint, query, "-f", "jsonl", "--remote",
                                     f"sc://localhost:{port}/;token={token}", cwd=tmp_path))
        assert remote and remote == ok(runs.local("sql", savepoint, query, "-f", "jsonl"))
        apps = [a["name"] for a in spark_cluster.state().get("activeapps", [])]
        assert "statectl-connect-on-cluster" in apps
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)


def test_no_temp_folder_left_on_the_driver_or_the_executors(runs, spark_cluster):
    """Runs last: the cluster commands' TMPDIR and the executors' hold no statectl-* entry."""
    assert statectl_entries(runs.tmp) + spark_cluster.statectl_temp_entries() == []
