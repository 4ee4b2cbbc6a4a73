"""The warm engine: one Spark kept running between commands, reached through Spark Connect.

The first command that needs Spark starts the server (`cli.engine_server`: statectl's own Spark
session with Spark Connect's plugin) in the background and connects to it; later commands
connect and start no JVM. The server listens on 127.0.0.1 only and refuses a client without its
token, a random secret kept in its record, a file only its user can read
(``$STATECTL_ENGINE_DIR``, else ``$XDG_RUNTIME_DIR/statectl-engine``, else
``~/.cache/statectl/engine``). It stops after :func:`idle_seconds` without a command
(``STATECTL_ENGINE_IDLE``, default 300), and ``statectl engine stop`` stops it.

A record is trusted only while its process lives and is the server, and while its fingerprint
(statectl's code, PySpark's version, the Python, the environment the tasks read) matches this
command's: else the server is stopped and a new one started. ``STATECTL_ENGINE=classic`` (or a
server that cannot start: no Java, say) runs the command with a Spark of its own, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time

from statectl.statefmt.errors import StatectlError

RECORD = "engine.json"
ACTIVITY = "activity"
LOCK = "engine.lock"
LOG = "engine.log"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
DEFAULT_IDLE = 300.0
IN_USE = 5.0  # a server whose activity file is this fresh has a command connected (heartbeat)
# what the server's JVM and tasks take from the environment: a server started under other values
# is not the one this command asks for
ENVIRONMENT = ("JAVA_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_HOME",
               "SPARK_CONF_DIR", "PYTHONPATH", "STATECTL_FLINK_HOME")


class EngineUnavailable(StatectlError):
    """The warm engine could not be started or reached (the command runs classic Spark)."""


@dataclasses.dataclass(frozen=True)
class Record:
    pid: int
    port: int
    token: str
    fingerprint: str
    started: float
    idle: float

    @property
    def url(self) -> str:
        # "localhost" (not 127.0.0.1): PySpark's client sends a token without TLS only to it
        return f"sc://localhost:{self.port}/;token={self.token};user_agent=statectl"


def classic_requested() -> bool:
    return os.environ.get("STATECTL_ENGINE", "warm").strip().lower() == "classic"


def idle_seconds() -> float:
    text = os.environ.get("STATECTL_ENGINE_IDLE", "")
    try:
        return max(1.0, float(text)) if text else DEFAULT_IDLE
    except ValueError:
        return DEFAULT_IDLE


def state_path() -> str:
    """Where the engine's folder is (made or not)."""
    folder = os.environ.get("STATECTL_ENGINE_DIR")
    if not folder:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        folder = os.path.join(runtime, "statectl-engine") if runtime else \
            os.path.join(os.path.expanduser("~"), ".cache", "statectl", "engine")
    return folder


def state_dir() -> str:
    """The engine's folder, made private to this user (0700) and refused when another user owns it."""
    folder = state_path()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if info.st_uid != os.getuid():
        raise EngineUnavailable(f"{folder} belongs to another user")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


# --- the record ---------------------------------------------------------------
def write_record(folder: str, record: Record) -> None:
    temp = os.path.join(folder, f".{RECORD}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(dataclasses.asdict(record), f)
    os.replace(temp, os.path.join(folder, RECORD))


def read_record(folder: str) -> Record | None:
    try:
        with open(os.path.join(folder, RECORD)) as f:
            return Record(**json.load(f))
    except (OSError, ValueError, TypeError):
        return None


def remove_record(folder: str, pid: int) -> None:
    """The record, if it is *pid*'s (a newer server's record stays)."""
    record = read_record(folder)
    if record is not None and record.pid == pid:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, RECORD))


def touch(folder: str) -> None:
    path = os.path.join(folder, ACTIVITY)
    with contextlib.suppress(OSError):
        with open(path, "a"):
            pass
        os.utime(path)


def last_activity(folder: str) -> float:
    try:
        return os.stat(os.path.join(folder, ACTIVITY)).st_mtime
    except OSError:
        return 0.0


def is_server(pid: int) -> bool:
    """Whether *pid* is a live warm-engine server (not a process that took over a dead one's id)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"statectl.cli.engine_server" in f.read()
    except OSError:
        return False


def live_record(folder: str) -> Record | None:
    record = read_record(folder)
    if record is None:
        return None
    if not is_server(record.pid):
        remove_record(folder, record.pid)  # a stale record: its server died
        return None
    return record


def fingerprint() -> str:
    """What a server must share with this command for its tasks to decode as this command would."""
    from statectl.statefmt.fs import S3_VARIABLES

    seen = [code_fingerprint(), *(f"{v}={os.environ.get(v, '')}" for v in (*ENVIRONMENT, *sorted(S3_VARIABLES)))]
    return hashlib.sha256("\0".join(seen).encode()).hexdigest()[:32]


def code_fingerprint() -> str:
    """The code a process runs: statectl's files (their folder, the newest change), PySpark's
    version, the Python and its import path (but the entry's own folder, ``sys.path[0]``).
    Read without importing PySpark: a command handed to the command server (`cli.handoff`)
    asks it before anything else."""
    import statectl

    root = os.path.dirname(statectl.__file__)
    newest = 0.0
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("tests", "bench", "docs", "examples", "__pycache__")
                   and not d.startswith(".")]
        newest = max([newest, *(os.stat(os.path.join(base, f)).st_mtime for f in files if f.endswith(".py"))])
    seen = [getattr(statectl, "__version__", ""), _pyspark_version(), sys.executable, root, str(newest),
            *sys.path[1:]]
    return hashlib.sha256("\0".join(seen).encode()).hexdigest()[:32]


def _pyspark_version() -> str:
    """PySpark's version as its ``version.py`` says it ("" when PySpark is not found)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return ""
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    found = re.search(r"""__version__[^=]*=\s*["']([^"']+)["']""", text)
    return found.group(1) if found else ""


# --- start, reach, stop -------------------------------------------------------
def connect():
    """A Spark Connect session on this user's warm engine, started if none serves (EngineUnavailable
    when it cannot start)."""
    folder = state_dir()
    wanted = fingerprint()
    record = live_record(folder)
    if record is None or record.fingerprint != wanted:
        import fcntl

        with open(os.path.join(folder, LOCK), "w") as lock:  # one command starts it; the others wait
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = live_record(folder)
            if record is not None and record.fingerprint != wanted:
                if time.time() - last_activity(folder) < IN_USE:  # never pulled from under a command
                    raise EngineUnavailable("the warm engine serves a command of other settings now")
                stop(folder, record)
                record = None
            if record is None:
                record = _start(folder, wanted)
    touch(folder)
    _heartbeat(folder)
    return remote_session(record.url, fail_fast=True)


HEARTBEAT = 1.0


def _heartbeat(folder: str) -> None:
    """While this command runs, the activity file touched every :data:`HEARTBEAT` seconds: the
    server is not idle while a command is between queries (a killed command stops touching)."""
    import threading

    def beat() -> None:
        while True:
            touch(folder)
            time.sleep(HEARTBEAT)
    threading.Thread(target=beat, daemon=True, name="statectl-engine-heartbeat").start()


def remote_session(url: str, fail_fast: bool = False):
    """A new Spark Connect session at *url*, checked by one round trip; with *fail_fast*, few
    retries of a failed call (the warm engine's own server)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    # pyspark.sql.functions builds Connect columns only in a process marked so (as
    # SparkSession.builder.remote() marks it)
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    spark = RemoteSession.builder.remote(url).create()
    if fail_fast:  # a local server that ended will not come back: no ten minutes of retries
        from pyspark.sql.connect.client.retries import DefaultPolicy

        spark._client.set_retry_policies([DefaultPolicy(max_retries=3, max_backoff=1000)])
    spark.version  # noqa: B018 -- the round trip: a dead or refusing server fails here
    return spark


def _start(folder: str, wanted: str) -> Record:
    last = ""
    for _ in range(2):  # a port taken between choosing it and binding it: once more on another
        proc = _spawn(folder, _free_port(), wanted)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            record = read_record(folder)
            if record is not None and record.pid == proc.pid:
                return record
            time.sleep(0.1)
        if proc.poll() is None:
            proc.kill()
            raise EngineUnavailable(f"the server did not start within {START_TIMEOUT:.0f} s")
        last = _last_log_line(folder)
        if "BindException" not in last and "Address already in use" not in last:
            break
    raise EngineUnavailable(f"the server ended at start: {last or 'no message'}")


def _spawn(folder: str, port: int, wanted: str) -> subprocess.Popen:
    scratch = os.path.join(folder, "tmp")  # the server's own: a command's TMPDIR may go before it
    os.makedirs(scratch, mode=0o700, exist_ok=True)
    env = dict(os.environ, SPARK_CONNECT_AUTHENTICATE_TOKEN=secrets.token_hex(32), SPARK_LOCAL_IP="127.0.0.1",
               TMPDIR=scratch)
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_MASTER", None)
    with open(os.path.join(folder, LOG), "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "statectl.cli.engine_server", folder, str(port), str(idle_seconds()), wanted],
            cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # a Ctrl-C of the command that started it does not reach it


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _last_log_line(folder: str) -> str:
    try:
        with open(os.path.join(folder, LOG), errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    for line in reversed(lines):  # the exception's own line rather than a stack frame
        if "Exception" in line or "Error" in line:
            return line[:300]
    return lines[-1][:300] if lines else ""


def stop(folder: str, record: Record) -> bool:
    """Stop the server of *record* (SIGTERM: it stops Spark and removes its record; SIGKILL after
    :data:`STOP_TIMEOUT`). Whether one was running."""
    if not is_server(record.pid):
        remove_record(folder, record.pid)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while is_server(record.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if is_server(record.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pid, signal.SIGKILL)
    remove_record(folder, record.pid)
    return True
