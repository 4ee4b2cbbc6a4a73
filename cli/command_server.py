"""The warm engine's command server: a process that has imported what commands import, forking
one process per command handed to it (`cli.handoff` says why and what a command sends).

    python -m statectl.cli.command_server STATE_DIR

The engine's server starts it beside itself (`cli.engine_server`) and stops it when it stops;
it also ends when its parent is gone. It listens on ``commands.sock`` in STATE_DIR (a folder
only its user can open), and serves a connection only from a process of its own user, of the
same statectl code and interpreter settings (`cli.handoff.interpreter_fingerprint`). It never
starts a thread, a Spark session or a connection of its own, so each fork begins as a new
process would, with its modules loaded. A fork becomes the command: its own process group (a
signal to the server's does not reach it), the caller's working directory, environment,
umask and standard streams; it runs `cli.main.run` and ends as a Python process ends (its
threads joined, ``atexit`` run, streams flushed). The fork tells the caller its pid, then its
exit status; the server tells it the status of a fork that could not (killed).
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import socket
import sys
import traceback

from . import handoff
from .handoff import SOCKET, peer_uid, receive_request

# what commands import: a fork of a process holding them starts its command at once
PRELOAD = ("pyspark.sql.connect.session", "pyspark.sql.connect.dataframe", "pyspark.sql.connect.functions",
           "statectl.cli.app", "statectl.cli.frames", "statectl.cli.output", "statectl.readers.reader",
           "statectl.readers.datasource", "statectl.readers.local", "statectl.statefmt.formats",
           "statectl.statefmt.flink.model", "statectl.writers")
POLL = 1.0  # seconds between looks at whether the engine's server still lives


def serve(state_dir: str) -> None:
    import importlib

    from .startup import refuse

    refuse()  # the same imports refused as in a command; pyspark's import lifts pandas' refusal
    for name in PRELOAD:
        importlib.import_module(name)
    code = handoff.interpreter_fingerprint()
    parent = os.getppid()
    path = os.path.join(state_dir, SOCKET)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
    except OSError as e:  # a path too long for a socket, say: commands run in their own processes
        print(f"statectl command server: cannot listen on {path}: {e}", file=sys.stderr, flush=True)
        return
    os.chmod(path, 0o600)
    mine = os.stat(path).st_ino
    listener.listen(16)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a fork ended: select wakes (wake_read)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    running: dict[int, socket.socket] = {}
    try:
        while os.getppid() == parent:
            ready, _, _ = select.select([listener, wake_read], [], [], POLL)
            if wake_read in ready:
                os.read(wake_read, 512)
            _report_ended(running)
            if listener in ready:
                _accept(listener, code, running, (listener.fileno(), wake_read, wake_write))
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:  # a newer server's socket stays
                os.unlink(path)


def _accept(listener: socket.socket, code: str, running: dict, own_fds: tuple[int, ...]) -> None:
    """Serve one connection: a fork for a request of this user and code, else a refusal."""
    conn, _ = listener.accept()
    try:
        if peer_uid(conn) != os.getuid():
            conn.sendall(b"refused another user\n")
            conn.close()
            return
        conn.settimeout(2)  # a caller sends its request at once; a silent one does not hold the others up long
        message, fds = receive_request(conn)
        conn.settimeout(None)
    except Exception as e:  # noqa: BLE001 -- a bad request never ends the server
        print(f"statectl command server: a request refused: {e}", file=sys.stderr, flush=True)
        conn.close()
        return
    pid = _fork(conn, message, fds, running, own_fds) if message.get("code") == code else None
    for fd in fds:
        os.close(fd)
    if pid is None:  # the caller runs its command itself
        with contextlib.suppress(OSError):
            conn.sendall(b"refused\n")
        conn.close()
        return
    running[pid] = conn


def _fork(conn: socket.socket, message: dict, fds: list[int], running: dict,
          own_fds: tuple[int, ...]) -> int | None:
    """The pid of the fork that runs the command (None if the system has no process to give)."""
    # the caller's signals wait until the fork is ready for them (it unblocks them as its command
    # begins); the fork makes its process group before it tells the caller its pid
    signal.pthread_sigmask(signal.SIG_BLOCK, handoff.FORWARDED)
    try:
        pid = os.fork()
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, handoff.FORWARDED)
        print(f"statectl command server: cannot fork: {e}", file=sys.stderr, flush=True)
        return None
    if pid == 0:
        for fd in own_fds:
            os.close(fd)
        for other in running.values():  # other commands' callers: theirs, not this fork's
            other.close()
        _become_command(conn, message, fds)  # never returns
    signal.pthread_sigmask(signal.SIG_UNBLOCK, handoff.FORWARDED)
    return pid


def _report_ended(running: dict) -> None:
    """Tell each ended fork's caller its exit status (a signal's as a shell gives it: 128 + N).
    A fork says its own status as it ends; this tells it for a fork that could not (killed)."""
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
        conn.close()


def _become_command(conn: socket.socket, message: dict, fds: list[int]) -> None:
    """In the fork: take the caller's place, streams and signals, run the command, exit."""
    code = 1
    try:
        os.setpgid(0, 0)  # a process group of its own: a signal to the server's does not reach it
        conn.sendall(f"pid {os.getpid()}\n".encode())  # before its "exit": the fork says both
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(message["env"])
        os.chdir(message["cwd"])
        os.umask(message["umask"])
        _reset_process_state(message)
        _watch_caller(conn)
        sys.argv = list(message["argv"])
        handoff.served = True
        code = _run()
    except BaseException:  # noqa: BLE001 -- the fork must end here, never in the server's loop
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):  # said by the fork itself: the server may be gone
            conn.sendall(f"exit {code}\n".encode())
        os._exit(code)


def _reset_process_state(message: dict) -> None:
    """What a new Python process would take from this environment: its locale, time zone,
    temporary folder, standard streams (as the caller's encoded them, line-buffered at a
    terminal)."""
    import locale
    import tempfile
    import time

    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")
    time.tzset()
    tempfile.tempdir = None
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        encoding, errors = message["streams"][fd]
        buffered = open(fd, "rb" if fd == 0 else "wb", closefd=False)  # noqa: SIM115 -- buffered as Python's own
        stream = io.TextIOWrapper(buffered, encoding=encoding or "utf-8", errors=errors or "strict",
                                  line_buffering=fd == 2 or (fd == 1 and buffered.isatty()))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _watch_caller(conn: socket.socket) -> None:
    """The caller killed outright (its socket closes): this command and the processes of its
    group end at once, as they would have ended with it."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(64):
                pass
        os.killpg(os.getpid(), signal.SIGKILL)  # with what it started in its group (a JVM of its own)

    threading.Thread(target=watch, daemon=True, name="statectl-caller-watch").start()


def _run() -> int:
    """`cli.main.run` as a process runs it, its exit status returned: threads joined, ``atexit``
    functions run, streams flushed."""
    import atexit
    import threading

    from .main import run
    from .output import print_error

    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, handoff.FORWARDED)  # a Ctrl-C sent meanwhile: now
        run()
        code = 0
    except SystemExit as e:
        code = _exit_code(e.code)
    except KeyboardInterrupt:  # before or after the command's own handling of it
        print_error("interrupted")
        code = 130
    with contextlib.suppress(Exception):
        threading._shutdown()  # noqa: SLF001 -- what the interpreter does at exit
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            code = code or 120  # as Python ends when it cannot flush at exit
    return code


def _exit_code(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    serve(sys.argv[1])
