"""A command handed to the warm engine's command server (cli/handoff.py, cli/command_server.py):
run in a fork of a process that has imported what commands import, with the caller's command
line, directory, environment, umask and standard streams, and the caller's exit status, signals
and death. The command server here is a real one started by the test (no Spark: these commands
need none); the console script is the installed one. Real processes throughout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.builders import build_full_savepoint

STATECTL = str(Path(sys.executable).with_name("statectl"))
PYTHON = Path(STATECTL).read_text().splitlines()[0][2:].strip()  # the console script's own interpreter


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory):
    return str(build_full_savepoint(tmp_path_factory.mktemp("handoff") / "sp").location)


@pytest.fixture
def server(tmp_path):
    """A command server of this code in its own folder (the engine's folder of the commands)."""
    folder = tmp_path / "engine"
    folder.mkdir(mode=0o700)
    proc = subprocess.Popen([PYTHON, "-m", "statectl.cli.command_server", str(folder)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not (folder / "commands.sock").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
        time.sleep(0.05)
    yield folder, proc
    proc.terminate()
    assert proc.wait(timeout=20) == 0
    assert not (folder / "commands.sock").exists()  # it removes its socket


def run(folder: Path, *args: str, cwd=None, handoff: bool = True, umask: int | None = None,
        **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "STATECTL_ENGINE_DIR": str(folder), "COLUMNS": "200", **env}
    full.pop("STATECTL_ENGINE", None)
    if not handoff:
        full["STATECTL_HANDOFF"] = "off"
    return subprocess.run([STATECTL, *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=120,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))


def _children(pid: int) -> set[int]:
    return {int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()}


def _children_cpu(pid: int) -> int:
    """Clock ticks of CPU the ended children of *pid* used (its forks, once reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[13]) + int(fields[14])  # cutime, cstime


def _blocking_savepoint(tmp_path: Path) -> Path:
    """A savepoint folder whose `_metadata` is a FIFO no one writes: opening it waits."""
    folder = tmp_path / "waits"
    folder.mkdir()
    os.mkfifo(folder / "_metadata")
    return folder


def _start(folder: Path, *args: str, **env) -> subprocess.Popen:
    full = {**os.environ, "STATECTL_ENGINE_DIR": str(folder), **env}
    full.pop("STATECTL_ENGINE", None)
    return subprocess.Popen([STATECTL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)


def _wait_for(condition, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not within the time")


def test_a_handed_command_prints_exits_and_writes_as_one_run_here(server, savepoint, tmp_path):
    folder, proc = server
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(savepoint, work / "sp")  # a path relative to the caller's directory
    before = _children_cpu(proc.pid)
    for args in (["info", "sp"], ["info", "sp", "--json"], ["read", "sp", "--uid", "proc", "-f", "jsonl"],
                 ["info", "nope"], ["read", "sp", "--uid", "nope"], ["nosuch"], ["read"]):
        handed = run(folder, *args, cwd=work)
        here = run(folder, *args, cwd=work, handoff=False)
        assert (handed.returncode, handed.stdout, handed.stderr) == (here.returncode, here.stdout, here.stderr), args
    assert _children_cpu(proc.pid) > before  # the server's forks ran them
    assert run(folder, "info", "nope", cwd=work).stderr == f"error: {work / 'nope'}: no such savepoint directory\n"
    # a file written where the caller is, with the caller's umask
    handed = run(folder, "read", "sp", "--uid", "proc", "-f", "csv", "--output", "rows.csv", cwd=work, umask=0o077)
    assert handed.returncode == 0, handed.stderr
    written = work / "rows.csv"
    assert written.stat().st_mode & 0o777 == 0o600
    here = run(folder, "read", "sp", "--uid", "proc", "-f", "csv", cwd=work, handoff=False)
    assert written.read_text() == here.stdout and here.stdout.count("\n") > 10
    # the caller's environment: its encoding of standard output (here ASCII, escaping the rest)
    handed = run(folder, "info", "nöpe", cwd=work, PYTHONIOENCODING="ascii:backslashreplace")
    here = run(folder, "info", "nöpe", cwd=work, PYTHONIOENCODING="ascii:backslashreplace", handoff=False)
    assert (handed.returncode, handed.stderr) == (here.returncode, here.stderr) == (1, here.stderr)
    assert "n\\xf6pe" in here.stderr


def test_the_command_runs_in_a_fork_ctrl_c_reaches_it_and_a_killed_caller_ends_it(server, tmp_path):
    folder, proc = server
    waits = _blocking_savepoint(tmp_path)
    assert _children(proc.pid) == set()
    command = _start(folder, "info", str(waits))
    fork, = _wait_for(lambda: _children(proc.pid))  # the server forked for it; the caller waits
    command.send_signal(signal.SIGINT)  # Ctrl-C: the caller passes it on
    out, err = command.communicate(timeout=30)
    assert (command.returncode, out, err) == (130, "", "error: interrupted\n")
    _wait_for(lambda: not _children(proc.pid))
    # the caller killed outright: its fork ends too
    command = _start(folder, "info", str(waits))
    fork, = _wait_for(lambda: _children(proc.pid))
    command.kill()
    command.wait(timeout=30)
    _wait_for(lambda: not Path(f"/proc/{fork}").exists() or fork not in _children(proc.pid))
    # the command's own process group: the server's group killed, a command runs on and says how it ended
    command = _start(folder, "info", str(waits))
    fork, = _wait_for(lambda: _children(proc.pid))
    assert os.getpgid(fork) == fork != os.getpgid(proc.pid)
    os.kill(fork, signal.SIGTERM)  # killed by a signal: the server says so, as a shell would
    out, err = command.communicate(timeout=30)
    assert (command.returncode, out) == (128 + signal.SIGTERM, "")


def test_other_code_a_dead_socket_another_users_or_captured_streams_run_the_command_here(server, savepoint,
                                                                                         tmp_path):
    folder, proc = server
    waits = _blocking_savepoint(tmp_path)
    # another import path is other code: refused, the caller runs it
    for other in ({"PYTHONPATH": str(tmp_path)}, {"PYTHONWARNINGS": "ignore"}):  # another interpreter's settings too
        command = _start(folder, "info", str(waits), **other)
        time.sleep(3)
        assert _children(proc.pid) == set() and command.poll() is None
        command.send_signal(signal.SIGINT)
        assert command.communicate(timeout=30)[1] == "error: interrupted\n"
    # the engine's own commands and the explorer always run here
    command = _start(folder, "--debug", "explore", str(waits))
    time.sleep(3)
    assert _children(proc.pid) == set()
    command.kill()
    command.wait(timeout=30)
    # a socket no one listens on: the command runs here
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(other / "commands.sock"))
    dead.close()
    done = run(other, "info", savepoint)
    assert done.returncode == 0 and done.stdout.startswith("Savepoint ")
    # a socket of another user's: nothing is sent to it, the command runs here
    os.chown(folder / "commands.sock", 65534, 65534)
    command = _start(folder, "info", str(waits))
    time.sleep(3)
    assert _children(proc.pid) == set() and command.poll() is None
    command.kill()
    command.wait(timeout=30)
    os.chown(folder / "commands.sock", os.getuid(), os.getgid())
    # standard output that is not descriptor 1 (a program capturing it): this process runs it
    probe = ("import io, sys; sys.argv = ['statectl', 'info', sys.argv[1]]; out = io.StringIO(); sys.stdout = out\n"
             "from statectl.cli.main import run\ntry:\n    run()\nexcept SystemExit:\n    pass\n"
             "sys.__stdout__.write(out.getvalue()[:9])")
    done = subprocess.run([PYTHON, "-c", probe, savepoint], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "STATECTL_ENGINE_DIR": str(folder)})
    assert done.stdout == "Savepoint" and _children(proc.pid) == set(), done.stderr


def test_the_socket_is_its_users_only_and_the_server_ends_with_its_parent(tmp_path):
    folder = tmp_path / "engine"
    folder.mkdir(mode=0o700)
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([{PYTHON!r}, '-m', 'statectl.cli.command_server', {str(folder)!r}])\n"
        "print(p.pid, flush=True)\ntime.sleep(600)")], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    sock = _wait_for(lambda: (folder / "commands.sock").exists() and folder / "commands.sock")
    assert sock.stat().st_mode & 0o777 == 0o600
    parent.kill()
    parent.wait()
    _wait_for(lambda: not _running(pid), seconds=10)
    assert not sock.exists()


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
