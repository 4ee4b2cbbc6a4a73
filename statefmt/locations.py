"""Where a savepoint's files lie, and removing the files a replaced savepoint leaves behind.

Below :mod:`.savepoint` and every physical format: the RocksDB format fetches its
files through :func:`file_location`, and each format's commit removes what the
savepoint it replaced named and the new one does not (:func:`remove_replaced`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .errors import MissingFileError, StatectlError, UnsafeReferenceError
from .fs import Location
from .model import FileRef, Savepoint
from .refs import check_relative_path
from .resolve import resolve_reference

METADATA_FILE = "_metadata"


def file_location(sp: Savepoint, ref: FileRef) -> Location:
    """Where the file named by *ref* lies, for a savepoint read from disk.

    Goes through :func:`resolve.resolve_reference`: the file must stay inside its
    savepoint (a symlink leading out is refused, naming the operator).
    """
    if sp.location is None:
        raise StatectlError("the savepoint has no location yet")
    if ref.location is not None:  # a Flink file handle, checked by resolve_reference when loaded
        return Location(ref.location)
    root = sp.location
    if ref.savepoint is not None:
        try:
            root = sp.lineage_entry(ref.savepoint).location
        except KeyError:
            raise MissingFileError(
                f"{ref.path}: savepoint {ref.savepoint} is not in the lineage") from None
    try:
        return resolve_reference(root, ref.path)
    except UnsafeReferenceError as e:
        owner = next((op.label for op, f in sp.data_files() if f.ref == ref), None)
        where = f"operator {owner}" if owner else "file reference"
        raise UnsafeReferenceError(f"{where}: {str(e).split(': ', 1)[-1]}") from None


@dataclass(frozen=True)
class FileCopy:
    """One file to copy into a new savepoint: bytes [start, start + size) of *source*."""
    source: Location
    start: int
    size: int
    whole: bool  # the whole file (copied by the filesystem), not a segment of a merged one
    name: str  # its relative path in the new savepoint


def remove_replaced(out: Location, previous: Iterable[str], referenced: Iterable[str]) -> None:
    """After the commit of an overwrite: the files of the old savepoint at *out* (*previous*,
    relative paths) the new one does not reference. A path that is not a plain relative
    path inside *out* is never touched."""
    for path in set(previous) - set(referenced) - {METADATA_FILE}:
        try:
            check_relative_path(path)
        except StatectlError:
            continue
        out.child(path).delete_file()
