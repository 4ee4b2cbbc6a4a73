"""The operators of a Flink base a new savepoint keeps: shallow pointer copies whose files stay
where they lie (their lineage recorded beside `_metadata`), or, self-contained, their files
copied next to the new `_metadata` (`statefmt/flink/shallow.py`)."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.flink.shallow import lineage_needed, pointer_copy, self_contained
from statectl.statefmt.fs import Location
from statectl.statefmt.locations import FileCopy

from ..copies import THREADS, copy_name


class KeptOperators:
    """The operators *kept* of the Flink savepoint *fsp* as a new savepoint holds them: pointer
    copies (absolute handles) with the lineage entries their files lie in, or, once
    :meth:`copy` ran, with their files copied into the new savepoint (no lineage)."""

    def __init__(self, fsp, kept: list[FlinkOperator]):
        self.fsp = fsp
        self.source = kept
        self.operators = [pointer_copy(fsp.location, op) for op in kept]
        self.lineage = lineage_needed(fsp.location, fsp.savepoint_id, fsp.lineage, kept) if kept else ()
        self.files: set[str] = set()  # the copies' names in the new savepoint

    def copy(self, out: Location, token: str) -> tuple[int, int]:
        """Copy the kept operators' files into *out*; the files and bytes copied."""
        if not self.source:
            return 0, 0
        ops, copies = self_contained(self.fsp.location, self.source, functools.partial(copy_name_for, token=token))
        copied = copy_into(out, copies)
        self.operators, self.lineage, self.files = ops, (), {c.name for c in copies}
        return len(copies), copied


def copy_name_for(name: str, taken: set[str], token: str) -> str:
    """A copy's name for the file *name*: marked with the write's *token*, none of *taken*."""
    new, n = copy_name(name, token), 1
    while new in taken:
        new, n = copy_name(f"{name}.{n}", token), n + 1
    return new


def copy_into(out: Location, copies: list[FileCopy]) -> int:
    """Copy every file (or segment) into *out*; the bytes copied. Sizes are checked."""
    def one(c: FileCopy) -> int:
        target = out.child(c.name)
        size = c.source.size()  # a missing source: MissingFileError naming it
        if size < c.start + c.size or (c.whole and size != c.size):
            raise StatectlError(f"{c.source}: {size} bytes, _metadata says {c.size}")
        if not c.whole:  # a segment of a merged file becomes a file of its own
            with c.source.open_input_file() as f:
                f.seek(c.start)
                target.write_bytes_atomically(f.read(c.size))
            return c.size
        try:
            pafs.copy_files(c.source.path, target.path, source_filesystem=c.source.fs,
                            destination_filesystem=target.fs)
        except OSError as e:
            raise StatectlError(f"cannot copy {c.source} to {target}: {e}") from None
        return c.size

    with ThreadPoolExecutor(THREADS) as pool:
        return sum(pool.map(one, copies))
