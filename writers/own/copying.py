"""Making a savepoint of statectl's own format self-contained: copy every shared file into it.

Copies go through the filesystem's own copy (a server-side copy on object
stores), are checked against the size and checksum in `_metadata`, and carry
the write's token in their names so a failed write removes them too.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.fs import Location
from statectl.statefmt.integrity import verify_file
from statectl.statefmt.model import DataFile, FileRef, Savepoint
from statectl.statefmt.locations import file_location

from ..copies import THREADS, copy_name


def make_self_contained(sp: Savepoint, out: Location, token: str) -> tuple[Savepoint, int, int]:
    """*sp* with every shared file copied into *out*; also the files and bytes copied."""
    plan: dict[tuple[str, str], str] = {}  # (savepoint id, path) -> new path
    taken: set[str] = {f.ref.path for _, f in sp.data_files() if not f.ref.is_shared}
    sources: dict[tuple[str, str], DataFile] = {}
    for _, f in sp.data_files():
        if f.ref.is_shared and (f.ref.savepoint, f.ref.path) not in plan:
            new, n = copy_name(f.ref.path, token), 1
            while new in taken:
                new, n = copy_name(f"{f.ref.path}.{n}", token), n + 1
            taken.add(new)
            plan[(f.ref.savepoint, f.ref.path)] = new
            sources[(f.ref.savepoint, f.ref.path)] = f

    def copy(item) -> int:
        (sp_id, path), new = item
        f = sources[(sp_id, path)]
        source = file_location(sp.replace(location=out.uri), FileRef(path, sp_id))
        target = out.child(new)
        source.size()  # a missing source: MissingFileError naming it
        Location(target.uri.rsplit("/", 1)[0]).make_dirs()
        try:
            pafs.copy_files(source.path, target.path, source_filesystem=source.fs,
                            destination_filesystem=target.fs)
        except OSError as e:
            raise StatectlError(f"cannot copy {source} to {target}: {e}") from None
        try:
            verify_file(target, f)
        except StatectlError as e:
            raise type(e)(f"{source}: {str(e).split(': ', 1)[-1]}") from None
        return f.size

    with ThreadPoolExecutor(THREADS) as pool:
        copied = sum(pool.map(copy, plan.items()))

    def rewrite(f: DataFile) -> DataFile:
        if not f.ref.is_shared:
            return f
        return dataclasses.replace(f, ref=FileRef(plan[(f.ref.savepoint, f.ref.path)]))

    operators = [op.map_files(rewrite) for op in sp.operators]
    return sp.replace(operators=tuple(operators), lineage=()), len(plan), copied
