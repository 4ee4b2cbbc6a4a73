"""The warm engine's server process: statectl's Spark session with Spark Connect's plugin, kept
running between commands (`cli.engine` starts, finds and stops it).

    python -m statectl.cli.engine_server STATE_DIR PORT IDLE_SECONDS FINGERPRINT

It starts the Spark session a command would start (`cli.spark.spark_session`: the same settings,
the driver JVM's options, the warehouse in the temporary directory) with
``org.apache.spark.sql.connect.SparkConnectPlugin``, bound to 127.0.0.1 on PORT, refusing any
client without the token it finds in ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` (its parent put it
there; it is never on a command line). When the server is up it writes its record
(`cli.engine.Record`: pid, port, token, fingerprint) into STATE_DIR, readable by its user only.
Every :data:`POLL` seconds it asks whether it is idle: no Spark job running and no command
having touched the activity file for IDLE_SECONDS (a connected command touches it every
:data:`cli.engine.HEARTBEAT` seconds until it ends); then, or on SIGTERM, it stops Spark
(which removes its folders, all in the server's ``tmp/<pid>``: :func:`own_scratch`), removes its
record and exits. While it waits for commands it keeps Spark's Python workers started
(:class:`WorkerKeeper`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

POLL = 2.0
KEEP_WORKERS = 45.0  # seconds: less than the minute after which Spark ends an idle Python worker


def serve(state_dir: str, port: int, idle: float, fingerprint: str) -> None:
    from . import engine
    from .spark import spark_session

    os.chdir(state_dir)  # nothing Spark writes lands in a user's working directory
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    scratch = own_scratch(state_dir)
    commands = start_command_server(state_dir)  # imports while the JVM starts
    try:
        spark = spark_session(app_name="statectl-engine", extra_conf=server_conf(port), scratch=scratch)
    except BaseException:
        stop_command_server(commands)
        raise
    spark.sparkContext.setLogLevel("ERROR")
    record = engine.Record(pid=os.getpid(), port=port, token=os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"],
                           fingerprint=fingerprint, started=time.time(), idle=idle)
    engine.write_record(state_dir, record)
    engine.touch(state_dir)
    keeper = WorkerKeeper(record.url)
    try:
        tracker = spark.sparkContext.statusTracker()
        worked = time.monotonic()  # when Spark's Python workers last served a request, at the latest
        while not stop.wait(POLL):
            if tracker.getActiveJobsIds():
                engine.touch(state_dir)
                worked = time.monotonic()
            elif time.time() - engine.last_activity(state_dir) > idle:
                break
            elif time.monotonic() - worked > KEEP_WORKERS:
                keeper.keep()
                worked = time.monotonic()
    finally:
        engine.remove_record(state_dir, os.getpid())
        stop_command_server(commands)
        keeper.close()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def start_command_server(state_dir: str):
    """The command server (`cli.command_server`) beside this one, in its process group, writing
    to its log; None where it cannot start (commands then run in their own processes)."""
    import subprocess

    try:
        return subprocess.Popen([sys.executable, "-m", "statectl.cli.command_server", state_dir], cwd=state_dir,
                                stdin=subprocess.DEVNULL)
    except OSError as e:
        print(f"statectl engine: the command server did not start: {e}", file=sys.stderr, flush=True)
        return None


def stop_command_server(proc) -> None:
    """End the command server (its commands run on: each is a process group of its own)."""
    if proc is None:
        return
    import subprocess

    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def own_scratch(state_dir: str) -> str:
    """``tmp/<pid>`` in *state_dir*, made: the folder of every folder and file this server's JVM,
    Python workers and warehouse make. Spark removes its folders when it stops; a server killed
    (SIGKILL, the OOM killer) could not, so a server starting removes those of servers gone,
    as a command removes a dead server's record."""
    from . import engine

    root = os.path.join(state_dir, "tmp")
    os.makedirs(root, mode=0o700, exist_ok=True)
    for name in os.listdir(root):
        if name.isdigit() and not engine.is_server(int(name)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    mine = os.path.join(root, str(os.getpid()))
    os.makedirs(mine, mode=0o700, exist_ok=True)
    os.environ["TMPDIR"] = tempfile.tempdir = mine  # the Python workers inherit it through the JVM
    return mine


class WorkerKeeper:
    """Spark ends a Python worker idle for a minute (fixed in PySpark 4), and a command whose
    workers must start again pays their start and imports: about 1.5 s more for a small `sql`
    (2.8-3.8 s against 1.3 s). :meth:`keep` reads nothing (`readers.datasource.read_nothing`)
    through a Spark Connect session of the server's own, as a command reads: Spark keeps one
    set of workers per kind of session, and a read of the server's own Spark session would
    keep another set than the commands'."""

    def __init__(self, url: str):
        self.url = url
        self.session = None

    def keep(self) -> None:
        """Read nothing; a failure goes to the server's log and the server serves on (a command
        meeting the same failure says so)."""
        from statectl.readers.datasource import read_nothing
        from statectl.statefmt.errors import first_line

        from . import engine

        try:
            if self.session is None:
                self.session = engine.remote_session(self.url, fail_fast=True)
            read_nothing(self.session)
        except Exception as e:  # noqa: BLE001
            self.close()
            print(f"statectl engine: keeping Spark's Python workers failed: {first_line(e)}", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            with contextlib.suppress(Exception):  # a server going down may not answer
                session.stop()


def server_conf(port: int) -> dict[str, str]:
    """The Spark Connect settings of the warm engine: loopback, *port*, the token from the
    environment (Spark reads ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` itself); and local[*]'s default
    parallelism (its cores) said outright unless the user's Spark properties say it, for a
    command has no SparkContext to ask (`readers.datasource.default_parallelism`)."""
    from .sparkconf import spark_defaults

    conf = {
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",  # the driver's RPC and block manager: loopback too
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        # a session whose command ended (or died) is released; its views and caches go with it
        "spark.connect.session.manager.defaultSessionTimeout": "10m",
        # a killed task's Python worker is killed as soon as Spark sees it (default: 2 s later),
        # so an interrupted write's tasks write nothing after it cleaned up (writers/job.py)
        "spark.python.task.killTimeout": "0s",
    }
    if "spark.default.parallelism" not in spark_defaults():
        conf["spark.default.parallelism"] = str(len(os.sched_getaffinity(0)))
    return conf


if __name__ == "__main__":
    directory, port_text, idle_text, print_ = sys.argv[1:5]
    serve(directory, int(port_text), float(idle_text), print_)
