"""Starting Spark for the commands that need it, and turning its errors into one line.

Local mode unless told otherwise. Spark's own output is kept off the terminal:
the JVM inherits this process's stdout and stderr when it starts, so both
point at /dev/null meanwhile; PySpark's JSON error loggers are muted, since
statectl prints each error once. ``--debug`` shows everything.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import sys
import threading

from statectl.statefmt.errors import Interrupted, StatectlError, UsageError, first_line

from .options import debug_enabled

MASTER_HELP = "Spark master URL (default: SPARK_MASTER, spark-submit's, else local[*])."

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
}


def spark_session(master: str | None = None, app_name: str = "statectl", read_bytes: int | None = None,
                  extra_conf: dict[str, str] | None = None, scratch: str | None = None):
    """A SparkSession: *master* if given, else SPARK_MASTER / spark-submit's, else local[*].
    *read_bytes*: how much state the command reads, if that is all it does (see `cli.jvm`);
    *extra_conf*: more settings (the warm engine's Connect server, `cli.engine_server`);
    *scratch*: the folder for the folders the driver JVM makes (``spark.local.dir`` and
    ``java.io.tmpdir``: ``blockmgr-*``, ``spark-*``, ``artifacts-*``), else the system's."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    chosen = master or os.environ.get("SPARK_MASTER")
    if chosen:
        builder = builder.master(chosen)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master("local[*]")
    for key, value in {**DEFAULT_CONF, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    if not _starts_a_jvm():
        return builder.getOrCreate()
    builder = builder.config("spark.sql.warehouse.dir", _warehouse())
    from .sparkconf import spark_defaults

    user = spark_defaults()  # a --conf of the same key would replace the user's: theirs are kept
    if chosen and not chosen.startswith("local"):
        for key, value in executor_s3_environment(user).items():
            builder = builder.config(key, value)
    from .jvm import EXTRA_JAVA_OPTIONS, SHARED_ARCHIVE, driver_java_options, extra_java_options, without_archive
    ours = driver_java_options(read_bytes, user)
    if scratch is not None:
        builder = builder.config("spark.local.dir", scratch)
        ours = " ".join(o for o in (ours, f"-Djava.io.tmpdir={shlex.quote(scratch)}") if o)
    try:
        spark = builder.config(EXTRA_JAVA_OPTIONS, extra_java_options(user, ours)).getOrCreate()
    except Exception as e:  # PySpark's gateway error: the JVM ended before it was up
        if "JAVA_GATEWAY_EXITED" not in str(e) or SHARED_ARCHIVE not in ours:
            raise
        spark = builder.config(EXTRA_JAVA_OPTIONS, extra_java_options(user, without_archive(ours))).getOrCreate()
    _jvm_ends_before_this_process(spark)
    return spark


def _jvm_ends_before_this_process(spark) -> None:
    """At exit, end the JVM this process started and wait for it (up to :data:`JVM_EXIT_WAIT`
    seconds). It ends when its standard input closes, and on its way out removes Spark's folders
    (``blockmgr-*``, ``spark-*``, ``artifacts-*`` in ``java.io.tmpdir``); without the wait the
    command returned while they were still there."""
    import atexit

    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None or proc.stdin is None:
        return
    accumulators = spark.sparkContext._accumulatorServer

    def wait() -> None:
        with contextlib.suppress(Exception):
            if accumulators is not None:  # the JVM's end closes its connection: not an error to print
                accumulators.handle_error = lambda *_: None
            proc.stdin.close()
            proc.wait(timeout=JVM_EXIT_WAIT)
    atexit.register(wait)


JVM_EXIT_WAIT = 10.0


def executor_s3_environment(user: dict[str, str]) -> dict[str, str]:
    """``spark.executorEnv.*`` for the S3 settings in this process's environment (endpoint, region,
    credentials), each unless the user's Spark properties set it: an executor on another machine
    reads `s3://` files through pyarrow as the driver does, and would not see the driver's
    variables. (Spark's UI and event log redact the keys holding SECRET and TOKEN.)"""
    from statectl.statefmt.fs import S3_VARIABLES

    forwarded = {f"spark.executorEnv.{name}": os.environ[name] for name in S3_VARIABLES if name in os.environ}
    return {key: value for key, value in forwarded.items() if key not in user}


def _warehouse() -> str:
    """Spark's warehouse folder for this process. Spark makes it (in the working directory,
    by default) when its analysis first asks the session catalog, e.g. for a name a query
    gets wrong; statectl keeps no tables, so it is a temporary folder, removed at exit."""
    import atexit
    import shutil
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"statectl-warehouse-{os.getpid()}")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _starts_a_jvm() -> bool:
    """Whether the session about to be made starts its JVM here (not under spark-submit's,
    whose options are the user's, nor in a process whose gateway is already up)."""
    from pyspark import SparkContext

    return not os.environ.get("PYSPARK_SUBMIT_ARGS") and SparkContext._gateway is None


def start_spark(master: str | None = None, read_bytes: int | None = None, connect: bool = False,
                remote: str | None = None):
    """The session for a command, quiet unless ``--debug``; *read_bytes* as for :func:`spark_session`.

    *remote* (else ``SPARK_REMOTE``): a Spark Connect endpoint (``sc://...``) to run on. With
    *connect* (the command's Spark work runs over Spark Connect) and no master or remote named,
    the warm engine (`cli.engine`) unless ``STATECTL_ENGINE=classic``; where it cannot start,
    a Spark of the command's own, as without *connect*."""
    import warnings

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None:
        if master is not None:
            raise UsageError("--master and --remote (SPARK_REMOTE) name two engines: give one")
        return _connected(lambda: _remote(remote))
    if connect and _warm_allowed(master):
        from . import engine

        try:
            return _connected(engine.connect)
        except engine.EngineUnavailable as e:
            ENGINE_NOTES.append(f"the warm engine is unavailable ({first_line(e)}): classic Spark")
    if debug_enabled():
        return spark_session(master, read_bytes=read_bytes)
    from .output import spinner

    _quiet_pyspark_loggers()
    sys.stdout.flush()
    sys.stderr.flush()
    with spinner("starting Spark…"):
        saved = os.dup(1), os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            os.dup2(null, 2)
            spark = spark_session(master, read_bytes=read_bytes)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in (*saved, null):
                os.close(fd)
    spark.sparkContext.setLogLevel("OFF")  # a failed task is reported once, by statectl
    _plain_interrupts()
    return spark


ENGINE_NOTES: list[str] = []  # what --verbose says about the engine chosen
REMOTE_SESSIONS: list = []  # the Spark Connect sessions of this command: interrupted on Ctrl-C


def _warm_allowed(master: str | None) -> bool:
    from . import engine

    if master is not None or os.environ.get("SPARK_MASTER") or os.environ.get("PYSPARK_SUBMIT_ARGS"):
        return False
    if engine.classic_requested():
        ENGINE_NOTES.append("STATECTL_ENGINE=classic: a Spark of this command's own")
        return False
    from pyspark import SparkContext

    return SparkContext._gateway is None  # a process already running classic Spark keeps it


def _remote(url: str):
    from . import engine

    if not url.startswith("sc://"):
        raise UsageError(f"--remote must be a Spark Connect URL (sc://host:port), got {url!r}")
    try:
        return engine.remote_session(url)
    except Exception as e:  # refused, unreachable, a bad token: one line
        raise StatectlError(f"cannot reach the Spark Connect server {url.split(';')[0]}: {first_line(e)}") from None


def _connected(make):
    """A Spark Connect session made by *make*, quiet, released when the command ends."""
    import atexit

    if not debug_enabled():
        _quiet_pyspark_loggers()
        import warnings

        warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")  # the error says it once
    from .output import spinner

    with spinner("starting Spark…"):  # shown after a second: a server starting, a far endpoint
        spark = make()
    from statectl.readers.owner import claim

    claim(spark)  # its tasks on this machine end with this process, if it is killed outright
    REMOTE_SESSIONS.append(spark)
    atexit.register(_release, spark)
    _plain_interrupts()
    ENGINE_NOTES.append("Spark Connect")
    return spark


def _release(spark) -> None:
    with contextlib.suppress(Exception):
        spark.stop()
    from . import engine

    with contextlib.suppress(Exception):
        engine.touch(engine.state_dir())


def _quiet_pyspark_loggers() -> None:
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
    # py4j logs a call cut short by Ctrl-C on the root logger, with a traceback
    logging.getLogger().addHandler(logging.NullHandler())


_INTERRUPTED = threading.Event()


def _plain_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt and is remembered.

    PySpark's own handler cancels every job through the gateway from inside the
    signal handler, while the main thread is mid-call on it: that call fails
    and leaves tracebacks. The writer cancels its own jobs when it cleans up.
    An interrupt can also surface as a gateway error ("Answer from Java side is
    empty") instead of KeyboardInterrupt, so :func:`spark_errors` asks the flag.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_interrupt)


def _on_interrupt(signum, frame):
    _INTERRUPTED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def spark_errors():
    """Spark's errors (bad SQL, a failed job, no JVM) as one-line StatectlErrors."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (StatectlError, KeyboardInterrupt, PySparkException, Py4JError) as e:
        if debug_enabled():
            raise
        if isinstance(e, KeyboardInterrupt) or _INTERRUPTED.is_set():
            for session in REMOTE_SESSIONS:  # the server keeps serving; this command's queries end
                with contextlib.suppress(Exception):
                    session.interruptAll()
            raise Interrupted("interrupted") from None
        if isinstance(e, StatectlError):
            raise

        if type(e).__name__ == "SparkConnectGrpcException":
            raise StatectlError(connect_failure(e)) from None
        task_error = statectl_error_in(e)
        if task_error is not None:
            raise task_error from None
        hint = " (--debug shows Spark's own output)" if "JAVA_GATEWAY" in str(e) else ""
        raise StatectlError(f"Spark failed: {first_line(e)}{hint}") from None


def connect_failure(e: Exception) -> str:
    """One line for a Spark Connect server that ended or refused mid-command."""
    text = str(e)
    status = re.search(r"status = StatusCode\.(\w+)", text)
    details = re.search(r'details = "([^"]*)"', text)
    said = ": ".join(x.group(1) for x in (status, details) if x) or first_line(e)
    return f"the Spark Connect server stopped or refused the command ({said}); " \
        "the next command starts a new warm engine"


_TASK_ERROR = re.compile(r"statectl\.statefmt\.errors\.(\w+): (.+)")


def statectl_error_in(e: Exception) -> StatectlError | None:
    """The StatectlError a Spark task raised (a Flink stream that ends early, say), found in
    the failure's text, so the user sees that one line rather than Spark's."""
    from statectl.statefmt import errors

    text = str(e) + "\n" + str(getattr(e, "java_exception", "") or "")
    found = _TASK_ERROR.search(text)
    if found is None:
        return None
    cls = getattr(errors, found.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, StatectlError)):
        cls = StatectlError
    return cls(found.group(2).strip())
