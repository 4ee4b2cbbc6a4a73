"""A subtask's RocksDB database built from entries given as Arrow arrays, then checkpointed:
statectl's own native format (`writers/own/native.py`, with `.database`'s options) and Flink's
native snapshots (`statefmt/flink/native_write.py`, with the options every Flink release reads).

SST files need strictly ascending keys. A column family's entries arrive as
binary key and value arrays (e.g. :mod:`.columnar`'s) with their key groups in
ascending order; the entries of the key groups an addition completes are
appended to the family's SST file in key order: as they come when they are
in order already (the writer asks Spark for the encoding's order), else
sorted first. Memory holds the key groups not yet complete. At the end the
files are ingested into a new database and a checkpoint of it is taken,
ready for :func:`statectl.statefmt.rocksdb.files.upload_checkpoint`.
"""

from __future__ import annotations

import collections
import itertools
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DuplicateKeyError


def _ascending(keys: pa.Array) -> bool:
    """Whether every key is greater than the one before (byte order)."""
    if len(keys) < 2:
        return True
    return bool(pc.all(pc.less(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py())


class SstFamily:
    """One column family's SST file; see the module doc. *options*: rocksdict's ``Options``
    its table is written with."""

    def __init__(self, name: str, path: str, options):
        self.name, self.path = name, path
        self.options = options
        self.writer = None
        self.last: bytes | None = None
        self.sorted_entries = 0  # entries that came out of order and were sorted here
        self._pending: list[tuple[pa.Array, pa.Array | None, np.ndarray]] = []

    def add(self, keys: pa.Array, values: pa.Array | None, groups: np.ndarray) -> None:
        """Entries (*values* None: empty values) of key groups *groups*, which never go below
        those of earlier additions."""
        if len(keys):
            self._pending.append((keys, values, groups))

    def flush(self, what: str, before: int | None = None) -> None:
        """Append the entries of the key groups below *before* (all without it), in key order;
        a key met twice is an error."""
        if not self._pending:
            return
        keys = pa.concat_arrays([k for k, _, _ in self._pending])
        values = None if self._pending[0][1] is None else \
            pa.concat_arrays([v for _, v, _ in self._pending])
        groups = np.concatenate([g for _, _, g in self._pending])
        cut = len(groups) if before is None else int(np.searchsorted(groups, before, "left"))
        self._pending = [] if cut == len(groups) else \
            [(keys.slice(cut), None if values is None else values.slice(cut), groups[cut:])]
        if cut:
            self._write(keys.slice(0, cut), None if values is None else values.slice(0, cut), what)

    def _write(self, keys: pa.Array, values: pa.Array | None, what: str) -> None:
        from rocksdict import SstFileWriter

        if not _ascending(keys):
            order = pc.sort_indices(keys)
            keys = keys.take(order)
            values = None if values is None else values.take(order)
            self.sorted_entries += len(keys)
            if not _ascending(keys):
                self._duplicate(what)
        first = keys[0].as_py()
        if self.last is not None and first <= self.last:
            self._duplicate(what)
        if self.writer is None:
            self.writer = SstFileWriter(self.options)
            self.writer.open(self.path)
        values = itertools.repeat(b"") if values is None else values.to_pylist()
        collections.deque(map(self.writer.__setitem__, keys.to_pylist(), values), maxlen=0)
        self.last = keys[len(keys) - 1].as_py()

    def _duplicate(self, what: str):
        raise DuplicateKeyError(f"{what}: two rows for the same key, namespace "
                                f"and state entry in column family {self.name!r}")

    def finish(self) -> bool:
        if self.writer is None:
            return False
        self.writer.finish()
        return True


def build_checkpoint(families: list[SstFamily], directory: str, db_options,
                     cf_options) -> tuple[str, dict[str, int]]:
    """Ingest the families' finished SST files into a new database below *directory* (opened
    with *db_options*, which create it and its column families, each with *cf_options*) and
    checkpoint it: the checkpoint's folder, and the entry count of each of its SST files."""
    from rocksdict import Checkpoint, IngestExternalFileOptions, Rdict

    ready = [f for f in families if f.finish()]
    db = Rdict(os.path.join(directory, "db"), db_options,
               column_families={f.name: cf_options for f in families})
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
