"""A subtask's RocksDB database built from entries, one sorted key group at a time.

SST files need strictly ascending keys: each column family's entries of one
key group are collected, sorted and appended to the family's SST file
(memory holds one key group); at the end the files are ingested into a new
database and a checkpoint of it is taken, ready for
:func:`statectl.statefmt.rocksdb.files.upload_checkpoint`.
"""

from __future__ import annotations

import os

from ..errors import DuplicateKeyError
from .database import cf_options, db_options


class Entries:
    """A column family's entries of the current key group; a RocksTable writes into it."""

    def __init__(self):
        self.items: list[tuple[bytes, bytes]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self.items.append((key, value))


class SstFamily:
    """One column family's SST file, fed one key group of :class:`Entries` at a time."""

    def __init__(self, name: str, path: str):
        self.name, self.path = name, path
        self.entries = Entries()
        self.writer = None
        self.last: bytes | None = None

    def flush(self, what: str) -> None:
        """Append the collected entries, sorted; a key met twice is an error."""
        from rocksdict import SstFileWriter

        items = self.entries.items
        if not items:
            return
        items.sort()
        if self.writer is None:
            self.writer = SstFileWriter(cf_options())
            self.writer.open(self.path)
        for k, v in items:
            if self.last is not None and k <= self.last:
                raise DuplicateKeyError(f"{what}: two rows for the same key, namespace "
                                        f"and state entry in column family {self.name!r}")
            self.writer[k] = v
            self.last = k
        items.clear()

    def finish(self) -> bool:
        if self.writer is None:
            return False
        self.writer.finish()
        return True


def build_checkpoint(families: list[SstFamily], directory: str) -> tuple[str, dict[str, int]]:
    """Ingest the families' finished SST files into a new database below *directory* and
    checkpoint it: the checkpoint's folder, and the entry count of each of its SST files."""
    from rocksdict import Checkpoint, IngestExternalFileOptions, Rdict

    ready = [f for f in families if f.finish()]
    db = Rdict(os.path.join(directory, "db"), db_options(),
               column_families={f.name: cf_options() for f in families})
    try:
        options = IngestExternalFileOptions()
        options.set_move_files(True)
        for f in ready:
            db.get_column_family(f.name).ingest_external_file([f.path], options)
        checkpoint = os.path.join(directory, "checkpoint")
        Checkpoint(db).create_checkpoint(checkpoint)
        entries = {f["name"].lstrip("/"): f["num_entries"] for f in db.live_files()}
    finally:
        db.close()
        del db
    return checkpoint, entries
