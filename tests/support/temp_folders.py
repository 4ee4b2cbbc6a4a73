"""The suite's own temporary directory, and what statectl left in it or in Spark's scratch space.

The suite runs with ``TMPDIR`` (and ``tempfile.tempdir``) set to a fresh folder of its
own, so its processes, Spark's Python workers and the cluster's daemons put their
temporary data there and nothing else's mixes in; pytest's own ``tmp_path`` folders stay
in the usual place. Spark's Python workers put statectl's scratch folders below the
executor's local directories (see ``statectl.statefmt.scratch``): those are checked too,
while the session runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "statectl-"


def use_own_tempdir() -> Path:
    """Point TMPDIR and tempfile at a new folder for the rest of this process (and its children)."""
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())  # pytest's tmp_path root
    folder = Path(tempfile.mkdtemp(prefix="suite-tmp-"))
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    return folder


def statectl_entries(*folders) -> list[str]:
    """The ``statectl-*`` entries of *folders*, as paths."""
    return sorted(str(p) for f in folders if f and os.path.isdir(f)
                  for p in Path(f).iterdir() if p.name.startswith(PREFIX))


def spark_scratch_dirs(session) -> list[str]:
    """The local directories a running session's Python workers are given (one small job)."""
    if session is None:
        return []
    # a lambda travels by value: the workers cannot import this module
    found = session.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("os").environ.get("SPARK_LOCAL_DIRS", "")).collect()[0]
    return [d for d in found.split(",") if d]


def suite_scratch_dirs(session) -> list[str]:
    """:func:`spark_scratch_dirs` at the session's end, where a broken session shows none."""
    try:
        return spark_scratch_dirs(session)
    except Exception:
        return []


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
