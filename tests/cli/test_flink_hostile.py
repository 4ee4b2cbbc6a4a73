"""Hostile Flink savepoints: every command refuses them in one line, writes nothing, changes
nothing, and opens or contacts nothing outside the savepoint. (Two exceptions, asserted as
such: `info` lists damage inside lk-proc's stream as an unreadable part, and `modify`, a
metadata-only copy, copies a stream whose header is damaged byte for byte.)

Each case edits a copy of the dev fixture `long-hashmap-canonical` (lk-proc's subtask 0
stream is ``PROC_STREAM``): a file handle with a URI query or on another filesystem, a
handle or a symlink leading out, a FIFO where a stream should be, counts and lengths of
2^31 in `_metadata` and in a stream header, a stream file cut short or too long. Each is run
through `info`, `validate`, `read`, `modify --self-contained`, `rescale` and
`bootstrap --base --format flink` (a spec rewriting lk-proc from an sql query over it).

Outside the savepoint lie a FIFO (opening it would block: those cases run `statectl` as a
process with a timeout, and a watch thread sees any FIFO opened for reading) and a copy of
the stream's bytes; a TCP listener on 127.0.0.1 must see no connection.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import socket
import stat
import struct
import threading
from pathlib import Path

import pytest

from support.cli_runner import statectl_process
from statectl.statefmt.flink.handles import AbsoluteFile
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.metadata import parse_metadata
from statectl.statefmt.flink.metadata_write import encode_metadata
from support.untrusted_helpers import assert_one_error_line, snapshot

FIXTURE = Path(__file__).parents[1] / "fixtures" / "flink-dev" / "long-hashmap-canonical" / "savepoint"
PROC_STREAM = "bc780fd0-df7b-44c3-82d9-5de05e45083a"  # lk-proc subtask 0, 17835 bytes
KEYED_HANDLE_AT = 0xCA  # lk-proc subtask 0's keyed handle type byte in _metadata
OPERATORS_AT = 20  # the number of operators (no master states before it)

SPEC = """\
operators:
  - uid: lk-proc
    parallelism: 3
    keyed:
      key: key
      input: {sql: "SELECT key, count FROM `lk-proc`"}
      states: [{name: count, kind: value, column: count}]
"""


class Env:
    """The tmp tree of one case: the savepoint, the output, what lies outside."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.sp = tmp / "sp"
        self.out = tmp / "out"
        self.outside = tmp / "outside"
        shutil.copytree(FIXTURE, self.sp)
        self.outside.mkdir()
        os.mkfifo(self.outside / "fifo")  # opening it for reading blocks: it must never be opened
        shutil.copy(FIXTURE / PROC_STREAM, self.outside / "copy")  # the very bytes expected
        (tmp / "spec.yaml").write_text(SPEC)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.connections: list = []
        self.opened: list[str] = []  # FIFOs some reader opened
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        """Record every connection to the listener, and every FIFO opened for reading (opening
        it for writing without blocking succeeds only then; closing it ends the reader's wait)."""
        self.listener.settimeout(0.05)
        while not self._stop.is_set():
            for fifo in (self.outside / "fifo", self.sp / PROC_STREAM):
                try:
                    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
                        continue
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:  # ENXIO: no reader
                    continue
                self.opened.append(str(fifo))
            try:
                conn, peer = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            self.connections.append(peer)
            conn.close()

    def close(self) -> tuple[list, list[str]]:
        self._stop.set()
        self._thread.join()
        self.listener.close()
        return self.connections, self.opened

    # --- edits ---------------------------------------------------------------------------

    def proc_handle(self, new_stream) -> None:
        """lk-proc subtask 0's keyed stream handle replaced (re-encoded `_metadata`)."""
        meta = parse_metadata((self.sp / "_metadata").read_bytes())
        ops = []
        for op in meta.operators:
            if op.uid == "lk-proc":
                s0 = op.subtasks[0]
                keyed = dataclasses.replace(s0.managed_keyed, stream=new_stream)
                op = dataclasses.replace(op, subtasks=(dataclasses.replace(s0, managed_keyed=keyed),
                                                       *op.subtasks[1:]))
            ops.append(op)
        (self.sp / "_metadata").write_bytes(encode_metadata(dataclasses.replace(meta, operators=tuple(ops))))

    def pack_metadata(self, fmt: str, at: int, value: int) -> None:
        data = bytearray((self.sp / "_metadata").read_bytes())
        struct.pack_into(fmt, data, at, value)
        (self.sp / "_metadata").write_bytes(bytes(data))

    def pack_stream(self, fmt: str, at: int, value: int) -> None:
        data = bytearray((self.sp / PROC_STREAM).read_bytes())
        struct.pack_into(fmt, data, at, value)
        (self.sp / PROC_STREAM).write_bytes(bytes(data))


def _proc_subtasks_at(data: bytes) -> int:
    """The offset of lk-proc's number of subtasks: name, uid, id, parallelisms, coordinator."""
    label = b"\x00\x07lk-proc"
    return data.index(label + label) + 2 * len(label) + 16 + 4 + 4 + 1


def _first_state_options_at(stream: bytes) -> int:
    """The offset of the first state's options count in lk-proc's keyed stream header."""
    name = read_keyed_header(stream, "x").states[0].name.encode()
    return stream.index(struct.pack(">H", len(name)) + name) + 2 + len(name) + 4


def _count(where: str, value: int):
    def edit(env: Env):
        meta = (env.sp / "_metadata").read_bytes()
        at = {"operators": OPERATORS_AT, "subtasks": _proc_subtasks_at(meta),
              "offsets": KEYED_HANDLE_AT + 5}.get(where)
        if where == "header options":
            env.pack_stream(">I", _first_state_options_at((env.sp / PROC_STREAM).read_bytes()), value)
        else:
            env.pack_metadata(">I", at, value)
    return edit


def _utf_length(env: Env):
    """The UTF length of lk-proc's stream file name: its largest, far past `_metadata`'s end."""
    meta = (env.sp / "_metadata").read_bytes()
    env.pack_metadata(">H", meta.index(PROC_STREAM.encode()) - 2, 0xFFFF)


def _fifo_inside(env: Env):
    (env.sp / PROC_STREAM).unlink()
    os.mkfifo(env.sp / PROC_STREAM)


def _symlink_out(env: Env):
    (env.sp / PROC_STREAM).unlink()
    (env.sp / PROC_STREAM).symlink_to(env.outside / "copy")


def _cut(env: Env):
    data = (env.sp / PROC_STREAM).read_bytes()
    (env.sp / PROC_STREAM).write_bytes(data[:-100])


def _overlong(env: Env):
    with open(env.sp / PROC_STREAM, "ab") as f:
        f.write(b"\x00" * 100)


SIZE = 17835

OPTIONS = "carries filesystem options"
FOREIGN = "is not on the savepoint's filesystem"
OUTSIDE = "lies outside the savepoint"

# name -> (edit, runs as a process (a FIFO lies where it may be opened), what the error says)
CASES = {
    "file-uri-query": (lambda env: env.proc_handle(AbsoluteFile(
        f"file://{env.sp}/{PROC_STREAM}?endpoint_override=127.0.0.1:{env.port}", SIZE)), False, OPTIONS),
    "s3-endpoint-override": (lambda env: env.proc_handle(AbsoluteFile(
        f"s3://bucket/{PROC_STREAM}?endpoint_override=127.0.0.1:{env.port}&scheme=http", SIZE)), False, FOREIGN),
    "hdfs": (lambda env: env.proc_handle(AbsoluteFile(
        f"hdfs://127.0.0.1:{env.port}/sp/{PROC_STREAM}", SIZE)), False, FOREIGN),
    "file-uri-outside": (lambda env: env.proc_handle(AbsoluteFile(f"file://{env.outside}/fifo", SIZE)),
                         True, OUTSIDE),
    "file-uri-outside-copy": (lambda env: env.proc_handle(AbsoluteFile(f"file://{env.outside}/copy", SIZE)),
                              False, OUTSIDE),
    "absolute-outside": (lambda env: env.proc_handle(AbsoluteFile(f"{env.outside}/fifo", SIZE)), True, OUTSIDE),
    "absolute-dotdot": (lambda env: env.proc_handle(AbsoluteFile(f"{env.sp}/../outside/fifo", SIZE)), True,
                        "may not contain '.' or '..' components"),
    "fifo-inside": (_fifo_inside, True, "not a"),  # "not a regular file" (read), "not a file" (modify)
    "symlink-out": (_symlink_out, False, "leads out of the savepoint (a symlink)"),
    "operators-0x7fffffff": (_count("operators", 0x7FFFFFFF), False, "impossible number of operator states"),
    "operators-0x80000000": (_count("operators", 0x80000000), False, "impossible number of operator states"),
    "subtasks-0x7fffffff": (_count("subtasks", 0x7FFFFFFF), False, "impossible number of subtasks"),
    # Flink marks a fully finished operator by -1 alone: any other negative count is refused.
    "subtasks-0x80000000": (_count("subtasks", 0x80000000), False, "impossible number of subtasks"),
    "offsets-0x7fffffff": (_count("offsets", 0x7FFFFFFF), False, "ends early: 17179869176 more byte(s)"),
    "offsets-0x80000000": (_count("offsets", 0x80000000), False, "negative count -2147483648"),
    "header options-0x7fffffff": (_count("header options", 0x7FFFFFFF), False, "ends early"),
    "header options-0x80000000": (_count("header options", 0x80000000), False, "ends early"),
    "utf-length": (_utf_length, False, "ends early: 65535 more byte(s) needed"),
    "stream-cut": (_cut, False, f"{SIZE - 100} bytes, _metadata"),
    "stream-overlong": (_overlong, False, f"{SIZE + 100} bytes, _metadata"),
}

COMMANDS = {
    "info": lambda env: ["info", str(env.sp)],
    "validate": lambda env: ["validate", str(env.sp)],
    "read": lambda env: ["read", str(env.sp), "--uid", "lk-proc"],
    "modify": lambda env: ["modify", str(env.sp), str(env.out), "--self-contained"],
    "rescale": lambda env: ["rescale", str(env.sp), str(env.out), "--max-parallelism", "256"],
    "bootstrap": lambda env: ["bootstrap", str(env.out), "--base", str(env.sp), "--format", "flink",
                              "--spec", str(env.tmp / "spec.yaml")],
}

# Damage inside lk-proc's keyed stream (the rest of the savepoint reads); every other case is
# refused whole, by `_metadata`'s parse or by the reference check of its file handles.
PART = {"fifo-inside", "header options-0x7fffffff", "header options-0x80000000", "stream-cut",
        "stream-overlong"}
COPIED_AS_IS = {"header options-0x7fffffff", "header options-0x80000000"}  # sizes right: modify copies


# A FIFO case runs `statectl` as a process (a FIFO opened would block it, not the suite), except
# these two, which start a JVM of their own there (20-50 s): in this process, the watch in
# `Env._accept` sees a FIFO opened and ends the wait.
STARTS_SPARK = {"rescale", "bootstrap"}


def _outside_out(files: dict[str, str], env: Env) -> dict[str, str]:
    return {path: digest for path, digest in files.items() if not path.startswith(f"{env.out}/")}


def _params():
    for case in CASES:
        for command in COMMANDS:
            yield pytest.param(case, command, id=f"{case}-{command}")


@pytest.mark.parametrize("case, command", _params())
def test_a_hostile_savepoint_is_refused_cleanly(cli, tmp_path, case, command):
    edit, as_process, why = CASES[case]
    env = Env(tmp_path)
    try:
        edit(env)
        before = snapshot(tmp_path)
        args = COMMANDS[command](env)
        if as_process and command not in STARTS_SPARK:
            result = statectl_process(*args, timeout=60)
        else:
            result = cli(*args, timeout=60)
    finally:
        connections, opened = env.close()
    assert connections == [], f"statectl {command} connected to the listener: {connections}"
    assert opened == [], f"statectl {command} opened {opened}"
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert _outside_out(snapshot(tmp_path), env) == before  # the savepoint, what lies outside: unchanged
    if command == "modify" and case in COPIED_AS_IS:
        # A metadata-only copy never decodes a stream: the damaged header is copied, byte for byte.
        assert result.returncode == 0, (result.stdout, result.stderr)
        copied = [p for p in env.out.iterdir() if p.name.startswith(PROC_STREAM)]
        assert len(copied) == 1 and copied[0].read_bytes() == (env.sp / PROC_STREAM).read_bytes()
        return
    assert not env.out.exists() or not any(env.out.iterdir()), sorted(env.out.rglob("*"))
    if command == "info" and case in PART:
        # The damage lies in lk-proc's keyed stream: info lists it as unreadable, reads nothing.
        assert result.returncode == 0 and result.stderr.strip() == "", (result.stdout, result.stderr)
        unreadable = result.stdout[result.stdout.index("Unreadable"):]
        assert re.search(r"^\s*lk-proc\s+keyed state\b", unreadable, re.M), result.stdout
        return
    if command == "validate":
        # The report on stdout: one problem, naming what is wrong; nothing on stderr.
        assert result.returncode == 1 and result.stderr.strip() == "", (result.stdout, result.stderr)
        problems = [line for line in result.stdout.splitlines() if line.startswith("problem: ")]
        assert len(problems) == 1, result.stdout
        if case not in COPIED_AS_IS:  # validate checks sizes, decodes no header (without --deep)
            assert why in problems[0], problems[0]
        assert "invalid: " in result.stdout, result.stdout
        return
    assert result.returncode == 1, (result.stdout, result.stderr)
    line = assert_one_error_line(result)
    if command in ("bootstrap", "rescale") and case in PART:
        # The base's lk-proc has no readable keyed table: nothing can be built from it.
        assert "operator lk-proc: its keyed state and timers cannot be read: " in line, line
    else:
        assert why in line, line


@pytest.mark.slow
def test_the_unedited_copy_passes_every_command(cli, tmp_path):
    """The control: each command, spec and listener as above, on the fixture's copy as it is."""
    env = Env(tmp_path)
    try:
        before = snapshot(env.sp, env.outside)
        for command, args in COMMANDS.items():
            shutil.rmtree(env.out, ignore_errors=True)
            result = cli(*args(env), timeout=120)
            assert result.returncode == 0, (command, result.stdout, result.stderr)
            if command in ("modify", "rescale", "bootstrap"):
                assert (env.out / "_metadata").is_file()
    finally:
        connections, opened = env.close()
    assert connections == [] and opened == []
    assert snapshot(env.sp, env.outside) == before
