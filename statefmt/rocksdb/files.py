"""The RocksDB format's files in a savepoint: a subtask's keyed state as the files of its database.

A snapshot is a RocksDB checkpoint (a consistent set of SST files plus the
MANIFEST, CURRENT and OPTIONS files that reopen them) copied into the
savepoint. SST files are immutable and never renamed, so an incremental
snapshot copies only the SST files its predecessor does not hold and refers to
the others where they lie (a :class:`FileRef` into the predecessor, listed in
the lineage). `docs/FORMAT.md` §12 specifies it. No Spark here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import uuid
from typing import Iterable

from ..errors import IntegrityError, MissingFileError
from ..fs import Location
from ..integrity import ALGORITHM
from ..locations import file_location
from ..model import DataFile, FileRef, LineageEntry, Operator, Savepoint

# Files of a checkpoint that reopening does not need.
_SKIPPED = ("LOCK", "LOG")
CHUNK = 4 * 1024 * 1024


def checkpoint_files(directory: str) -> list[str]:
    return sorted(n for n in os.listdir(directory)
                  if n not in _SKIPPED and not n.startswith("LOG.old"))


def _upload(local: str, out: Location, relative: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(local, "rb") as src, out.child(relative).open_output_stream() as dst:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return size, f"{ALGORITHM}:{digest.hexdigest()}"


@dataclasses.dataclass
class SharedFiles:
    """SST files of the last committed snapshot, by name: what an incremental one may reuse."""

    files: dict[str, DataFile] = dataclasses.field(default_factory=dict)
    lineage: dict[str, LineageEntry] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, sp: Savepoint, files: Iterable[DataFile]) -> "SharedFiles":
        """The SST files among *files* of committed *sp*, as references from a later savepoint."""
        shared = cls()
        for f in files:
            if not (f.name or "").endswith(".sst"):
                continue
            if f.ref.savepoint is None:
                entry = LineageEntry(sp.savepoint_id, sp.location)
                f = dataclasses.replace(f, ref=FileRef(f.ref.path, sp.savepoint_id))
            else:
                entry = sp.lineage_entry(f.ref.savepoint)
            shared.files[f.name] = f
            shared.lineage[entry.savepoint_id] = entry
        return shared


def checkpoint_folder(operator_id: str, key_groups: tuple[int, int], tag: str = "") -> str:
    """A new folder for one database's files; *tag* (if any) ends its name."""
    name = f"rocksdb-{key_groups[0]}-{key_groups[1]}-{uuid.uuid4().hex[:12]}"
    return f"{operator_id}/{name}-{tag}" if tag else f"{operator_id}/{name}"


def upload_checkpoint(checkpoint_dir: str, out: Location, operator_id: str,
                      key_groups: tuple[int, int], entries: dict[str, int],
                      shared: SharedFiles | None = None, folder: str | None = None
                      ) -> tuple[tuple[DataFile, ...], tuple[LineageEntry, ...]]:
    """Copy a RocksDB checkpoint below *out*, reusing *shared* SST files of the same name
    and size. *entries* gives the entry count of each SST file (its ``rows``); *folder*
    (relative to *out*) defaults to :func:`checkpoint_folder`."""
    folder = folder or checkpoint_folder(operator_id, key_groups)
    files, lineage = [], {}
    for name in checkpoint_files(checkpoint_dir):
        local = os.path.join(checkpoint_dir, name)
        old = shared.files.get(name) if shared else None
        if old is not None and old.size == os.path.getsize(local):
            files.append(old)
            entry = shared.lineage[old.ref.savepoint]
            lineage[entry.savepoint_id] = entry
            continue
        size, checksum = _upload(local, out, f"{folder}/{name}")
        files.append(DataFile(FileRef(f"{folder}/{name}"), size, checksum, entries.get(name, 0),
                              key_groups, name))
    return tuple(files), tuple(lineage.values())


def download(sp: Savepoint, files: Iterable[DataFile], directory: str) -> None:
    """Fetch one subtask's RocksDB files into *directory* under their names, verified."""
    os.makedirs(directory, exist_ok=True)
    for f in files:
        loc = file_location(sp, f.ref)
        digest, size = hashlib.sha256(), 0
        target = os.path.join(directory, f.name)
        with open(target, "wb") as out:
            for chunk in loc.iter_chunks():
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        if size != f.size:
            raise IntegrityError(f"{loc}: size is {size} bytes, _metadata records {f.size} "
                                 "(truncated or replaced file)")
        if f"{ALGORITHM}:{digest.hexdigest()}" != f.checksum:
            raise IntegrityError(f"{loc}: checksum mismatch (file altered or corrupt)")


def subtask_databases(op: Operator) -> dict[tuple[int, int], list[DataFile]]:
    """The native keyed files of *op*, grouped into one database per key-group range."""
    out: dict[tuple[int, int], list[DataFile]] = {}
    for f in op.keyed.files if op.keyed else ():
        out.setdefault(f.key_groups, []).append(f)
    if any(not any(f.name == "CURRENT" for f in fs) for fs in out.values()):
        raise MissingFileError(f"operator {op.label}: a RocksDB snapshot lacks its CURRENT file")
    return out
