"""Running `statectl` in tests: in this process against the suite's Spark session, or as a process.

:func:`statectl` runs a command in this process through the console script's own
entry point (:func:`statectl.cli.main.run`: the same error handling and exit
codes), with standard output and error captured as a piped process prints them.
A command that starts Spark (one with a ``--master`` option) uses the suite's
session instead of starting a JVM of its own (about 10 s each). The run puts
back everything it may change in the process: Spark's runtime options and log
level, the SIGINT handler, ``sys.excepthook``, the working directory, the
environment, the CLI's global options, the root logger's handlers, the job's classes
(``--classes``), the imports the CLI refuses until Spark (`statectl.cli.startup`).

:func:`statectl_process` runs the installed console script. Use it where the
process is the point: signals, a killed run, the modules a fresh process loads,
what a new JVM prints on the terminal, what Spark's workers import from the
working directory. In-process, Spark's JVM and Python workers keep the suite's
directory and environment: ``cwd`` changes the driver's directory only, and an
``env`` naming a variable Spark reads when it starts (:data:`SPARK_ENV_PREFIXES`)
runs a process instead.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from support.spark_session import LOG_LEVEL, running_spark, suite_spark

SPARK_ENV_PREFIXES = ("SPARK_", "PYSPARK_", "PYTHON", "JAVA_", "HADOOP_", "AWS_")
"""Variables read by Spark's JVM or its Python workers when they start (interpreter,
module path, JVM, Hadoop and S3 settings): an ``env`` naming one runs a process."""

TERMINAL_ENV = {"COLUMNS": "200"}


def statectl(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 600,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `statectl` with *args*, in this process unless *env* names a variable Spark reads."""
    if env and any(name.startswith(SPARK_ENV_PREFIXES) for name in env):
        return statectl_process(*args, cwd=cwd, timeout=timeout, env=env)
    return statectl_in_process(*args, cwd=cwd, timeout=timeout, env=env)


def statectl_process(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 600,
                     env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the installed `statectl` console script as a user would, in a process of its own."""
    return subprocess.run(
        ["statectl", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
        env={**os.environ, **TERMINAL_ENV, **(env or {})},
    )


def statectl_in_process(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 600,
                        env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `statectl` with *args* in this process, as :func:`statectl_process` would."""
    command = next((a for a in args if not a.startswith("-")), None)
    session = suite_spark() if _starts_spark(command) else running_spark()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_process_state(args, cwd, {**TERMINAL_ENV, **(env or {})}))
        if session is not None:
            stack.enter_context(_spark_state(session))
        captured = stack.enter_context(_captured_output())
        stack.enter_context(_warnings_printed())
        with _time_limit(timeout, args):
            code = _exit_code()
    if session is None:  # else the CLI built a session of its own, with its own options
        assert running_spark() is None, f"statectl {command} started Spark without a --master option"
    return subprocess.CompletedProcess(["statectl", *args], code, *captured)


def _starts_spark(command: str | None) -> bool:
    """Whether *command* starts Spark: the commands that do take ``--master``. They get the
    suite's session first, so the CLI never builds one of its own in this process."""
    import typer

    from statectl.cli.app import app

    found = typer.main.get_command(app).commands.get(command)
    return found is not None and any(param.name == "master" for param in found.params)


def _exit_code() -> int:
    """Run the console script's entry point; its exit status as the process would end with it."""
    from statectl.cli.main import run

    try:
        run()
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired:
        raise
    except Exception:
        sys.excepthook(*sys.exc_info())  # as an uncaught error ends the process: traceback, 1
        return 1
    return 0


@contextlib.contextmanager
def _process_state(args, cwd, env: dict):
    """argv, directory and environment of the run; afterwards, the process as it was."""
    from statectl.cli import startup
    from statectl.cli.options import OPTIONS
    from statectl.statefmt.flink.kryo import context as kryo_context

    saved = (list(sys.argv), os.getcwd(), dict(os.environ), dict(OPTIONS), sys.excepthook,
             signal.getsignal(signal.SIGINT), list(logging.getLogger().handlers))
    job_classes = kryo_context._job_classes  # --classes sets the job's classes for the process
    sys.argv = ["statectl", *args]
    if cwd is not None:
        os.chdir(cwd)
    os.environ.update(env)
    OPTIONS.update(_FRESH_OPTIONS)
    try:
        yield
    finally:
        argv, directory, environ, options, excepthook, sigint, handlers = saved
        sys.argv = argv
        os.chdir(directory)
        for name in os.environ.keys() - environ.keys():
            del os.environ[name]
        os.environ.update(environ)
        OPTIONS.clear()
        OPTIONS.update(options)
        sys.excepthook = excepthook
        signal.signal(signal.SIGINT, signal.SIG_DFL if sigint is None else sigint)
        logging.getLogger().handlers[:] = handlers
        kryo_context._job_classes = job_classes
        startup.lift()


def _fresh_options() -> dict:
    from statectl.cli.options import OPTIONS

    return dict(OPTIONS)


_FRESH_OPTIONS = _fresh_options()  # as a new process starts with them


@contextlib.contextmanager
def _spark_state(session):
    """The session's runtime options and log level put back (the CLI sets its own)."""
    conf = session.conf.getAll
    try:
        yield
    finally:
        assert running_spark() is not None, "statectl stopped the suite's Spark session"
        now = session.conf.getAll
        for key in now.keys() - conf.keys():
            session.conf.unset(key)
        for key, value in conf.items():
            if now.get(key) != value:
                session.conf.set(key, value)
        session.sparkContext.setLogLevel(LOG_LEVEL)


@contextlib.contextmanager
def _captured_output():
    """sys.stdout and sys.stderr as in a process with both piped, read back as
    ``subprocess.run(..., text=True)`` reads them; yields [stdout, stderr], filled at the end."""
    raw = io.BytesIO(), io.BytesIO()
    piped = (io.TextIOWrapper(raw[0], encoding="utf-8", write_through=True),
             io.TextIOWrapper(raw[1], encoding="utf-8", errors="backslashreplace",
                              write_through=True))
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = piped
    texts: list[str] = []
    try:
        yield texts
    finally:
        sys.stdout, sys.stderr = saved
        for stream, data in zip(piped, raw):
            stream.flush()
            text = data.getvalue().decode("utf-8", errors="replace")
            texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))


@contextlib.contextmanager
def _warnings_printed():
    """Warnings filtered as in a new process and printed on its stderr (pytest would keep them)."""
    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                         ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = show
        yield


@contextlib.contextmanager
def _time_limit(seconds: float, args):
    """Raise subprocess.TimeoutExpired after *seconds*, as subprocess.run(timeout=...) does;
    the run's Spark jobs are cancelled and awaited first, so the next test starts clean."""
    expired = []

    def expire(signum, frame):
        expired.append(True)
        raise subprocess.TimeoutExpired(["statectl", *args], seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if expired:
            _cancel_spark_jobs()
    if expired:  # Spark's gateway may have turned the exception into an error of its own
        raise subprocess.TimeoutExpired(["statectl", *args], seconds)


def _cancel_spark_jobs(wait: float = 120) -> None:
    session = running_spark()
    if session is None:
        return
    context = session.sparkContext
    context.cancelAllJobs()
    deadline = time.monotonic() + wait
    while context.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)


def error_line(result, sp: Path) -> str:
    """The one line a failing command prints, with the savepoint's path as SP."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0].replace(str(sp), "SP")
