"""The process a command belongs to, and its Spark tasks' watch on it.

A command's tasks run where its Spark runs them. In the command's own Spark they end with the
command; on a warm engine (or any Spark server on this machine) they would run on after the
command was killed outright (SIGKILL: no clean-up runs): a read would take both cores to its
end, a write would write files into its output after it is gone. So a command on Spark Connect
(`cli.spark`), and every write, names its process in the session setting :data:`OWNER_CONF`
(host, pid and the process's start time, which a reused pid does not share), which Spark hands
every task of its jobs. A task on that host does not begin once the process is gone, and
watches it while it runs (:func:`watching`, every :data:`POLL` seconds), ending its Python
worker at once when the process goes: no file is begun after that, and the files begun before
lie beside the write's marker, which the next write into that folder removes
(`writers/job.remove_dead_writes`). Tasks on other hosts (a cluster) cannot see the process and
do not watch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time

OWNER_CONF = "spark.statectl.owner"
POLL = 0.5  # seconds between a task's looks at its command's process


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of process *pid* from /proc (Linux), None where not readable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]


def identity(pid: int | None = None) -> str:
    """This host, *pid* (default: this process) and its start time, as ``host|pid|start``."""
    pid = os.getpid() if pid is None else pid
    stat = _stat(pid)
    return f"{socket.gethostname()}|{pid}|{stat[1] if stat else ''}"


def alive(pid: int, start: str = "") -> bool:
    """Whether process *pid* (started at *start*, when known) still runs: a process that ended
    but was not yet reaped (a zombie), or a new one under the same pid, does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _stat(pid)
    if stat is None:
        return True
    state, started = stat
    return state != "Z" and (not start or started == start)


def claim(spark) -> None:
    """Name this process as the owner of the jobs *spark* runs from now on."""
    spark.conf.set(OWNER_CONF, identity())


# --- the task side ---------------------------------------------------------------------------

_watched: tuple[int, str] | None = None  # (pid, start) of the command whose task this worker runs
_watcher: threading.Thread | None = None
_lock = threading.Lock()


def _owner_here() -> tuple[int, str] | None:
    """The running task's command's process, when it runs on this host."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    value = ctx.getLocalProperty(OWNER_CONF) if ctx is not None else None
    try:
        host, pid, start = value.split("|")
        return (int(pid), start) if host == socket.gethostname() else None
    except (AttributeError, ValueError):
        return None


def _end_worker() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # the worker ends: Spark fails the task


def _watch() -> None:
    while True:
        time.sleep(POLL)
        owner = _watched
        if owner is not None and not alive(*owner):
            _end_worker()


@contextlib.contextmanager
def watching():
    """While a task runs: end its worker once its command's process is gone (see the module
    doc); a task whose command is gone already does not begin."""
    global _watched, _watcher
    owner = _owner_here()
    if owner is None:
        yield
        return
    if not alive(*owner):
        _end_worker()
    with _lock:
        if _watcher is None:
            _watcher = threading.Thread(target=_watch, name="statectl-owner-watch", daemon=True)
            _watcher.start()
    _watched = owner
    try:
        yield
    finally:
        _watched = None
