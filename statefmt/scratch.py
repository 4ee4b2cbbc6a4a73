"""Scratch folders for statectl's temporary data (RocksDB copies, SST files being built).

Every folder is named ``statectl-<kind>-*`` and removed by whoever made it, on
success, error and interrupt (:func:`scratch_dir`, or a backend's ``close()``).
Inside a Spark task it lies below the executor's own local directories, which
Spark hands its Python workers as ``SPARK_LOCAL_DIRS`` and deletes when the
executor stops: a task killed before its cleanup ran leaves nothing behind once
the executor (or, in local mode, the session) ends. Elsewhere it lies in the
temporary directory (``TMPDIR``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator

PREFIX = "statectl-"


def spark_local_dir() -> str | None:
    """The first of Spark's local directories (``SPARK_LOCAL_DIRS``, its scratch space), if set."""
    first = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0]
    return first if first and os.path.isdir(first) else None


def new_scratch_dir(kind: str, within: str | os.PathLike | None = None) -> str:
    """A new empty folder ``statectl-<kind>-*`` (below *within* if given); the caller removes it."""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=within or spark_local_dir())


def remove_scratch_dir(path: str | os.PathLike) -> None:
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch_dir(kind: str, within: str | os.PathLike | None = None) -> Iterator[str]:
    """A scratch folder for the ``with`` block, removed afterwards whatever happened."""
    path = new_scratch_dir(kind, within)
    try:
        yield path
    finally:
        remove_scratch_dir(path)
