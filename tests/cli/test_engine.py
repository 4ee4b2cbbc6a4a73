"""The warm engine (cli/engine.py): a real Spark Connect server on loopback, started by the first
command that needs Spark, reused by the next, refused without its token, replaced when stale or
killed, stopped when idle or told, and the same rows as classic Spark. Real processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from support.builders import build_full_savepoint

pytestmark = pytest.mark.slow

STATECTL = str(Path(sys.executable).with_name("statectl"))  # this Python's, not another install's
QUERY = "SELECT count(*) AS n, sum(count) AS total FROM proc"


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory):
    return str(build_full_savepoint(tmp_path_factory.mktemp("engine") / "sp").location)


@pytest.fixture
def engine_dir(tmp_path):
    folder = tmp_path / "engine"
    yield folder
    record = _record(folder)
    if record is not None:  # whatever a failed test left: stopped, by its own pid
        with _suppress():
            os.killpg(record["pid"], signal.SIGKILL)


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)


def run(engine_dir: Path, *args: str, cwd=None, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "STATECTL_ENGINE_DIR": str(engine_dir), "STATECTL_ENGINE_IDLE": "120",
            "COLUMNS": "200", **env}
    full.pop("STATECTL_ENGINE", None) if "STATECTL_ENGINE" not in env else None
    return subprocess.run([STATECTL, *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=180)


def _record(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "engine.json").read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        return b"engine_server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _tree(pid: int) -> set[int]:
    found, todo = {pid}, [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").iterdir():
            children = (task / "children").read_text().split()
            for c in map(int, children):
                if c not in found:
                    found.add(c)
                    todo.append(c)
    return found


def _cpu_seconds(pids: set[int], during: float) -> float:
    """CPU seconds the processes *pids* use in the next *during* seconds."""
    def total() -> float:
        seconds = 0.0
        for p in pids:
            with _suppress():
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                seconds += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return seconds
    before = total()
    time.sleep(during)
    return total() - before


def _listening_addresses(pids: set[int]) -> set[str]:
    """The local addresses the processes *pids* listen on (TCP, v4 and v6), from `ss`."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    found = set()
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            found.add(line.split()[3].rsplit(":", 1)[0])
    return found


def test_first_command_starts_it_later_ones_reuse_it(savepoint, engine_dir, tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    classic = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl", STATECTL_ENGINE="classic")
    assert classic.returncode == 0, classic.stderr
    assert _record(engine_dir) is None  # classic: no server
    first = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl", cwd=work)
    assert (first.returncode, first.stdout, first.stderr) == (0, classic.stdout, "")
    record = _record(engine_dir)
    assert record is not None and _alive(record["pid"])
    assert oct((engine_dir / "engine.json").stat().st_mode & 0o777) == "0o600"
    where = run(engine_dir, "read", savepoint, "--uid", "proc", "--where", "count > 2", "-f", "jsonl",
                "--verbose", cwd=work)
    assert where.returncode == 0, where.stderr
    assert "spark: Spark Connect" in where.stderr
    assert _record(engine_dir)["pid"] == record["pid"]  # the same server answered
    want = run(engine_dir, "read", savepoint, "--uid", "proc", "--where", "count > 2", "-f", "jsonl",
               STATECTL_ENGINE="classic")
    assert sorted(where.stdout.splitlines()) == sorted(want.stdout.splitlines()) and want.stdout
    assert list(work.iterdir()) == []  # no spark-warehouse/, no temporary folder
    addresses = _listening_addresses(_tree(record["pid"]))
    assert addresses and addresses <= {"127.0.0.1", "[::ffff:127.0.0.1]"}, addresses
    status = run(engine_dir, "engine", "status")
    assert status.returncode == 0 and f"pid {record['pid']}" in status.stdout
    stop = run(engine_dir, "engine", "stop")
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert not _alive(record["pid"]) and _record(engine_dir) is None
    assert run(engine_dir, "engine", "status").returncode == 3


def test_the_token_refuses_others_and_remote_reaches_it(savepoint, engine_dir):
    assert run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl").returncode == 0
    record = _record(engine_dir)
    port, token = record["port"], record["token"]
    wrong = run(engine_dir, "sql", savepoint, QUERY, "--remote", f"sc://localhost:{port}/;token=not-{token}")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"error: cannot reach the Spark Connect server sc://localhost:{port}/")
    assert len(wrong.stderr.splitlines()) == 1
    none = run(engine_dir, "sql", savepoint, QUERY, "--remote", f"sc://localhost:{port}")
    assert none.returncode == 1 and len(none.stderr.splitlines()) == 1
    good = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl",
               SPARK_REMOTE=f"sc://localhost:{port}/;token={token}")
    assert good.returncode == 0 and json.loads(good.stdout)["n"] > 0
    run(engine_dir, "engine", "stop")


def test_killed_stale_and_concurrent(savepoint, engine_dir):
    # two commands at once, no server yet: one server starts, both answer
    runs = [None, None]

    def one(i):
        runs[i] = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl")
    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout
    record = _record(engine_dir)
    killed_scratch = engine_dir / "tmp" / str(record["pid"])  # Spark's folders: there, not in /tmp
    assert {p.name.split("-")[0] for p in killed_scratch.iterdir()} >= {"blockmgr", "spark", "artifacts"}
    # killed: the next command starts a new server, which removes the folders the killed one left
    os.killpg(record["pid"], signal.SIGKILL)
    time.sleep(0.5)
    again = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl")
    assert again.returncode == 0 and again.stdout == runs[0].stdout, again.stderr
    newer = _record(engine_dir)
    assert newer["pid"] != record["pid"] and _alive(newer["pid"])
    assert [p.name for p in (engine_dir / "tmp").iterdir()] == [str(newer["pid"])]
    # a server of other code (another fingerprint), no command connected to it: replaced
    time.sleep(6)  # the last command's heartbeat has gone stale (a server in use is not pulled)
    (engine_dir / "engine.json").write_text(json.dumps({**newer, "fingerprint": "another-version"}))
    replaced = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl")
    assert replaced.returncode == 0, replaced.stderr
    assert not _alive(newer["pid"]) and _record(engine_dir)["pid"] != newer["pid"]
    run(engine_dir, "engine", "stop")
    assert list((engine_dir / "tmp").iterdir()) == []  # a server stopped leaves nothing


def test_it_stops_when_idle(savepoint, engine_dir):
    done = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl", STATECTL_ENGINE_IDLE="2")
    assert done.returncode == 0, done.stderr
    pid = _record(engine_dir)["pid"]
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(pid) and _record(engine_dir) is None


API_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from statectl import open_savepoint, KeyedData, OperatorData, SavepointWriter, ValueState
spark = SparkSession.builder.remote(sys.argv[2]).getOrCreate()
sp = open_savepoint(sys.argv[1], spark=spark)
n = sp.sql("SELECT count(*) AS n FROM proc").collect()[0]["n"]
keyed = sp.keyed("proc").count()
rows = sp.keyed("proc").groupBy("user").agg({"count": "sum"}).withColumnRenamed("sum(count)", "count")
SavepointWriter.new(max_parallelism=128).with_operator(OperatorData("copy", parallelism=2, keyed=KeyedData(
    key=["user"], data=rows, states=[ValueState("count", column="count")]))).write(sys.argv[3], spark)
spark.stop()
copied = open_savepoint(sys.argv[3]).keyed("copy")  # read back without Spark
print(json.dumps({"n": n, "keyed": keyed, "copied": sorted(map(list, zip(*copied.to_pydict().values())))}))
"""


def test_the_python_api_takes_a_connect_session(savepoint, engine_dir, tmp_path):
    assert run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl").returncode == 0
    record = _record(engine_dir)
    url = f"sc://localhost:{record['port']}/;token={record['token']}"
    done = subprocess.run([sys.executable, "-c", API_SCRIPT, savepoint, url, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["n"] == got["keyed"] == 40
    want: dict[str, int] = {}
    for row in map(json.loads, run(engine_dir, "read", savepoint, "--uid", "proc", "-f", "jsonl").stdout.splitlines()):
        want[row["user"]] = want.get(row["user"], 0) + (row["count"] or 0)
    assert got["copied"] == sorted(map(list, want.items())) and len(want) > 1
    run(engine_dir, "engine", "stop")


FLINK = Path(__file__).resolve().parents[1] / "fixtures" / "flink-dev" / "long-rocksdb-native" / "savepoint"


GONE_OWNER_SCRIPT = """
import subprocess, sys
from pyspark.sql import SparkSession
from statectl import open_savepoint
from statectl.readers.owner import OWNER_CONF, identity
spark = SparkSession.builder.remote(sys.argv[2]).getOrCreate()
gone = subprocess.Popen(["true"])
gone.wait()  # a process that has ended: a command killed outright
spark.conf.set(OWNER_CONF, identity(gone.pid))
try:
    print("read", open_savepoint(sys.argv[1], spark=spark).keyed("lk-proc").count())
except Exception as e:
    print("refused", type(e).__name__)
spark.conf.set(OWNER_CONF, identity())  # this process, alive
print("read", open_savepoint(sys.argv[1], spark=spark).keyed("lk-proc").count())
"""


def _python_processes(pid: int) -> set[int]:
    """Spark's Python daemons and workers under the server *pid*."""
    found = set()
    for p in _tree(pid):
        with _suppress():
            if b"pyspark.daemon" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.add(p)
    return found


def test_a_command_after_a_pause_finds_its_python_workers_started(engine_dir):
    """Spark ends a Python worker idle for a minute; the server keeps its workers started while
    it waits (cli/engine_server.WorkerKeeper), so a command after a longer pause starts no Python
    process: it reads in the workers of the command before (a worker's start and imports cost a
    small `sql` about 1.5 s)."""
    query = ("sql", str(FLINK), "SELECT count(*) AS n FROM `lk-proc`", "-f", "jsonl")
    assert run(engine_dir, *query).returncode == 0
    pid = _record(engine_dir)["pid"]
    before = _python_processes(pid)
    time.sleep(75)
    after = run(engine_dir, *query)
    assert (after.returncode, after.stdout) == (0, '{"n":30}\n'), after.stderr
    # without the keeper four start (create, plan, two task workers); a fresh-clone CI run under
    # load once saw one start with it (not found why), so one is let pass, not four
    assert before and len(_python_processes(pid) - before) <= 1
    run(engine_dir, "engine", "stop")


def test_a_read_of_a_command_killed_outright_does_not_run_on(engine_dir):
    """The Data Source's tasks belong to the command that named its process (readers/owner.py):
    once it is gone, they do not begin (and end within 0.5 s when it goes while they run), so
    a warm `sql` killed with SIGKILL does not leave the server reading to the end; the server
    serves the next read."""
    assert run(engine_dir, "sql", str(FLINK), "SELECT count(*) AS n FROM `lk-proc`", "-f", "jsonl").returncode == 0
    record = _record(engine_dir)
    url = f"sc://localhost:{record['port']}/;token={record['token']}"
    done = subprocess.run([sys.executable, "-c", GONE_OWNER_SCRIPT, str(FLINK), url],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    refused, served = done.stdout.strip().splitlines()[-2:]
    assert refused.startswith("refused ") and served == "read 30", done.stdout
    run(engine_dir, "engine", "stop")


def test_writes_and_diff_run_on_the_warm_engine(savepoint, engine_dir, tmp_path):
    """rescale, prune and bootstrap over the warm engine write what classic Spark writes (diff,
    itself warm, finds them identical); a write whose data is wrong ends in its one line and
    leaves no file; the server stays the same; nothing is left in the working directory."""
    work = tmp_path / "cwd"
    work.mkdir()
    outputs = {}
    for engine in ("warm", "classic"):
        env = {"STATECTL_ENGINE": "classic"} if engine == "classic" else {}
        for name, args in {"rescaled": ("rescale", str(FLINK), "--max-parallelism", "512"),
                           "pruned": ("prune", savepoint, "--where", "count > 2")}.items():
            out = outputs[name, engine] = str(tmp_path / f"{name}-{engine}")
            done = run(engine_dir, args[0], args[1], out, *args[2:], "--json", cwd=work, **env)
            assert done.returncode == 0, done.stderr
    pid = _record(engine_dir)["pid"]
    for name in ("rescaled", "pruned"):
        diff = run(engine_dir, "diff", outputs[name, "warm"], outputs[name, "classic"], "--content-only", cwd=work)
        assert diff.returncode == 0 and diff.stdout.strip().endswith("identical"), diff.stdout + diff.stderr
    (tmp_path / "d.csv").write_text("user,n\na,1\nb,2\na,3\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"operators": [{"uid": "p", "parallelism": 2, "keyed": {
        "key": ["user"], "input": {"path": str(tmp_path / "d.csv")},
        "states": [{"name": "n", "kind": "value", "column": "n"}]}}]}))
    bad = run(engine_dir, "bootstrap", "--spec", str(spec), str(tmp_path / "bad"), cwd=work)
    assert (bad.returncode, bad.stderr) == (1, "error: operator 'p', value state 'n': key user=a has 2 rows; a "
                                               "value state holds one value per key (set combine to sum, min, "
                                               "max or any)\n")
    assert not (tmp_path / "bad").exists()
    assert _record(engine_dir)["pid"] == pid and list(work.iterdir()) == []
    run(engine_dir, "engine", "stop")


LONG = "SELECT count(*) AS n FROM proc CROSS JOIN range(4000000000)"


def _start(engine_dir: Path, savepoint: str) -> subprocess.Popen:
    env = {**os.environ, "STATECTL_ENGINE_DIR": str(engine_dir), "STATECTL_ENGINE_IDLE": "120"}
    env.pop("STATECTL_ENGINE", None)
    return subprocess.Popen([STATECTL, "sql", savepoint, LONG], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_ctrl_c_and_a_server_killed_mid_command(savepoint, engine_dir):
    assert run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl").returncode == 0
    pid = _record(engine_dir)["pid"]
    # Ctrl-C: the command ends in one line, the server keeps serving
    command = _start(engine_dir, savepoint)
    time.sleep(8)
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=120)
    assert command.returncode != 0 and len(err.splitlines()) == 1 and "interrupted" in err, err
    assert _alive(pid)
    time.sleep(2)
    assert _cpu_seconds(_tree(pid), 3.0) < 1.5  # the query was cancelled, not left running
    after = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl")
    assert after.returncode == 0 and _record(engine_dir)["pid"] == pid, after.stderr
    # the server killed while a query runs: one clear line, and the next command starts another
    command = _start(engine_dir, savepoint)
    time.sleep(8)
    os.killpg(pid, signal.SIGKILL)
    out, err = command.communicate(timeout=120)
    assert command.returncode == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("error: the Spark Connect server stopped or refused the command"), err
    again = run(engine_dir, "sql", savepoint, QUERY, "-f", "jsonl")
    assert again.returncode == 0 and _record(engine_dir)["pid"] != pid, again.stderr
    run(engine_dir, "engine", "stop")
