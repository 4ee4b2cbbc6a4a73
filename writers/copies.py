"""The copies a self-contained write makes, in either family: their names (the original's,
marked with the write's token so a failed write removes them too) and how many run at once."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"-w[0-9a-f]{12}")
THREADS = 8


def copy_name(path: str, token: str) -> str:
    """The path of a copy: the same place and name, marked with this write's token."""
    folder, _, name = path.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    stem = _TOKEN.sub("", stem if dot else name)
    new = f"{stem}-{token}.{ext}" if dot else f"{stem}-{token}"
    return f"{folder}/{new}" if folder else new
