"""A bootstrap that hangs in one task until told to go on: for tests that interrupt or kill a
write while its files are half written."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from support.savepoint_rows import files_below

BLOCKING_FUNCTION = """
import os
import time

def blocking(key, rows, ctx):
    # while the block file exists, the task holding key u0 waits; the other task finishes
    deadline = time.monotonic() + 300
    while key == ("u0",) and os.path.exists({block!r}) and time.monotonic() < deadline:
        time.sleep(0.05)
    ctx.value("n").update(rows.num_rows)
"""


def blocked_bootstrap(tmp_path, stderr=subprocess.DEVNULL, env: dict | None = None):
    """A `statectl bootstrap` (in *env* added to this one's) whose task of key u0 hangs while
    tmp_path/block exists; returned once the other task has written its file, as (process, spec,
    block file, output folder). Runs in a session of its own, as from a terminal."""
    block = tmp_path / "block"
    block.touch()
    (tmp_path / "fns.py").write_text(BLOCKING_FUNCTION.format(block=str(block)))
    (tmp_path / "keys.csv").write_text("user\n" + "\n".join(f"u{i}" for i in range(200)) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("operators:\n  - uid: p\n    parallelism: 2\n    keyed:\n      key: user\n"
                    "      input: keys.csv\n      function: fns.py:blocking\n"
                    "      states: [{name: n, kind: value, type: int64}]\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(["statectl", "bootstrap", "--spec", str(spec), str(out)],
                            stdout=subprocess.DEVNULL, stderr=stderr, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 180
    while not any(p.endswith(".parquet") for p in files_below(out)):  # one task wrote
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("the bootstrap ended or stalled before writing a file")
        time.sleep(0.05)
    return proc, spec, block, out
