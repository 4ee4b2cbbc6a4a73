"""A command handed to the warm engine's command server, which runs it in a process forked from
one that has already imported what commands import (`cli.command_server`).

A command's own Python spends most of a warm `sql` importing: PySpark's Connect client (which
imports pandas), pyarrow, numpy, protobuf and statectl itself, about 0.8 s of the 1 s it takes
before its query reaches Spark. The warm engine keeps a process with all of that imported
beside its server; ``statectl`` then only connects to its socket (``commands.sock`` in the
engine's folder), hands over its command line, working directory, environment, umask and its
standard input, output and error (the file descriptors themselves, so a terminal stays a
terminal and a pipe a pipe), and waits: the server forks, the fork runs the command exactly as
this process would have, and its exit status becomes this process's. Ctrl-C, SIGTERM and SIGHUP
received here are passed on to the fork's process group (the fork and the processes it started,
as a terminal signals its foreground group); if this process is killed outright, the fork sees
its socket close and kills its group too.

Any doubt runs the command here, as before: no socket, a server of other code (statectl's
files, PySpark, the Python or its import path differ) or of other interpreter settings (flags,
``PYTHON*`` variables), another user's socket, ``STATECTL_ENGINE=classic``, or standard streams
that are not this process's descriptors 0-2 (a program that captures them). Once a fork has
said it runs the command, the command never runs here as well. ``statectl engine ...`` and
``statectl explore`` (a screen that follows its terminal's size) always run here; so does any
command when ``STATECTL_HANDOFF=off``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys

SOCKET = "commands.sock"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RUN_HERE = ("engine", "explore")  # the engine's own commands; an interactive screen (its terminal's signals)
_LENGTH = struct.Struct("!I")
_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
served = False  # this process is a command server's fork: it runs its command itself


def handed_off(args: list[str]) -> int | None:
    """The exit status of *args* run by the command server, or None to run them here."""
    if served or os.environ.get("STATECTL_HANDOFF", "").lower() in ("off", "0", "no") \
            or _command(args) in RUN_HERE:
        return None
    if not _streams_are_descriptors():
        return None
    from . import engine

    if engine.classic_requested():
        return None
    path = os.path.join(engine.state_path(), SOCKET)
    try:
        if os.stat(path).st_uid != os.getuid():  # never this command's environment to another user
            return None
    except OSError:
        return None
    forwarder = _Forwarder()  # a Ctrl-C from now on is the command's, wherever it runs
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(path)
            if peer_uid(conn) != os.getuid():
                forwarder.cancel()
                return None
            send_request(conn, request(args))
            reply = conn.makefile("r", encoding="utf-8")
            first = reply.readline().split()
        except OSError:
            forwarder.cancel()
            return None
        if first[:1] == ["pid"]:  # the fork runs it: from here on, never run here too
            forwarder.start(int(first[1]))
            return _wait(reply)
        if first[:1] == ["exit"]:  # a fork that ended before it could say it runs
            return int(first[1])
        forwarder.cancel()  # refused (other code, another user), or no server to answer
        return None


def _command(args: list[str]) -> str | None:
    """The command *args* name (after the app's own options)."""
    rest = iter(args)
    for arg in rest:
        if arg == "--s3-endpoint":
            next(rest, None)
        elif not arg.startswith("-"):
            return arg
    return None


def _streams_are_descriptors() -> bool:
    """Whether ``sys.stdin``, ``stdout`` and ``stderr`` are this process's descriptors 0, 1 and 2:
    the fork gets the descriptors, so a program that put other streams in their place (a test
    capturing output, say) runs its command itself."""
    for fd, stream in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        try:
            if stream is None or stream.fileno() != fd:
                return False
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            return False
    return True


def interpreter_fingerprint() -> str:
    """The code this process runs (`cli.engine.code_fingerprint`) and how its interpreter was
    started: its flags, warning options and ``PYTHON*`` variables, which a fork cannot take on
    (``PYTHONIOENCODING`` aside: the fork encodes its streams as the caller's do)."""
    import hashlib

    from .engine import code_fingerprint

    seen = [code_fingerprint(), repr(sys.flags), *sys.warnoptions,
            *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PYTHON") and k != "PYTHONIOENCODING")]
    return hashlib.sha256("\0".join(seen).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def request(args: list[str]) -> dict:
    """What the fork needs to be this process: its command line, place, environment, umask, the
    code and interpreter it must be (`interpreter_fingerprint`) and how its standard streams
    encode text."""
    umask = os.umask(0)
    os.umask(umask)
    streams = [[getattr(s, "encoding", None), getattr(s, "errors", None)] for s in (sys.stdin, sys.stdout, sys.stderr)]
    return {"argv": [sys.argv[0], *args], "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
            "code": interpreter_fingerprint(), "streams": streams}


def peer_uid(conn: socket.socket) -> int:
    """The user of the process at the other end of a connected Unix socket."""
    _, uid, _ = _CREDENTIALS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size))
    return uid


def send_request(conn: socket.socket, message: dict) -> None:
    """*message* (JSON, its length first) with this process's standard input, output and error."""
    data = json.dumps(message).encode()
    socket.send_fds(conn, [_LENGTH.pack(len(data)) + data], [0, 1, 2])


def receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The message and the three file descriptors of :func:`send_request`."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    try:
        if len(data) < _LENGTH.size:
            raise ValueError("a request too short")
        length = _LENGTH.unpack_from(data)[0]
        data = data[_LENGTH.size:]
        while len(data) < length:
            more = conn.recv(length - len(data))
            if not more:
                raise ValueError("a request cut short")
            data += more
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} file descriptors, not 3")
        return json.loads(data), fds
    except Exception:
        for fd in fds:
            os.close(fd)
        raise


class _Forwarder:
    """Signals to this process passed on to the fork's process group (as a terminal signals its
    foreground group); those that come before the fork is known wait for it."""

    def __init__(self):
        self.pid: int | None = None
        self.pending: list[int] = []
        self.saved = {signum: signal.signal(signum, self._received) for signum in FORWARDED}

    def _received(self, signum, _frame) -> None:
        if self.pid is None:
            self.pending.append(signum)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)

    def start(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signum)

    def cancel(self) -> None:
        """No fork: the handlers as they were, and the signals that came meanwhile for this process."""
        for signum, handler in self.saved.items():
            signal.signal(signum, handler)
        for signum in self.pending:
            os.kill(os.getpid(), signum)


def _wait(reply) -> int:
    """The fork's exit status, as the fork or, for a fork killed, the server says it."""
    while True:
        try:
            line = reply.readline()
        except OSError:
            line = ""
        if not line:  # the fork was killed, and the server that would say so is gone
            print("error: the command ended without an exit status (the warm engine's command server "
                  "stopped)", file=sys.stderr)
            return 1
        words = line.split()
        if words[:1] == ["exit"]:  # the fork's own word, or the server's for a fork killed
            return int(words[1])
