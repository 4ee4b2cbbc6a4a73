"""One subtask's keyed state as a native RocksDB snapshot, the files Flink's RocksDB and ForSt
backends open as their own database when they restore.

The entries are the canonical stream's (`stream_write.EntryAssembler`: the same key bytes,
key-group prefix first, and the same value bytes, a list's elements joined with ``,``), but
each state's go into a column family of its own name, as the backends keep them. Each
column family's entries arrive in key order (key group, then key bytes), so each is written
by one ``SstFileWriter`` as they come; :meth:`NativeSnapshotBuilder.finish` creates the
database with every state's column family (Flink opens exactly the column families its
meta information names, empty ones too), ingests the files and returns the database's files
by their RocksDB names: the SST files, ``MANIFEST``, ``CURRENT`` and ``OPTIONS``, what a
native savepoint of Flink holds.

The tables are written as the oldest backend reads them: block-based format version 4 and
CRC32C checksums, which FRocksDB 6.20 (Flink 1.17 to 1.20) reads as well as Flink 2.x's
RocksDB and ForSt. Every entry is a plain value (no merge operands), as in a compacted
database.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from ..bytecolumns import join_rows, fixed
from ..scratch import new_scratch_dir
from .stream_write import Entries, key_group_prefixes

FORMAT_VERSION = 4
KEPT_FILES = ("CURRENT", "MANIFEST-", "OPTIONS-")  # with every *.sst: a snapshot's database


def _options():
    from rocksdict import BlockBasedOptions, ChecksumType, Options

    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    table = BlockBasedOptions()
    table.set_format_version(FORMAT_VERSION)
    table.set_checksum_type(ChecksumType.crc32c())
    options.set_block_based_table_factory(table)
    return options


class NativeSnapshotBuilder:
    """A RocksDB database of column families *state_names* (in a scratch folder of its own),
    fed :class:`Entries` in stream order; :meth:`finish` gives its files, :meth:`close`
    removes the folder."""

    def __init__(self, state_names: list[str], prefix_width: int):
        self.state_names = state_names
        self.prefix_width = prefix_width
        self.folder = new_scratch_dir("native")
        self.options = _options()
        self.writers: dict[int, object] = {}
        self.entries = 0

    def add(self, entries: Entries | None) -> None:
        if entries is None:
            return
        keys = join_rows([fixed(key_group_prefixes(entries.key_groups, self.prefix_width)), entries.keys])
        sids = entries.state_ids
        cuts = np.flatnonzero(np.diff(sids)) + 1
        for start, stop in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(sids)]])):
            writer = self._writer(int(sids[start]))
            for k, v in zip(keys.slice(start, stop - start).to_pylist(),
                            entries.values.slice(start, stop - start).to_pylist()):
                writer[k] = v
        self.entries += len(entries)

    def _writer(self, state_id: int):
        writer = self.writers.get(state_id)
        if writer is None:
            from rocksdict import SstFileWriter

            writer = SstFileWriter(self.options)
            writer.open(os.path.join(self.folder, f"ingest-{state_id}.sst"))
            self.writers[state_id] = writer
        return writer

    def finish(self) -> list[tuple[str, str]]:
        """The database's files: (RocksDB name, path), in name order."""
        from rocksdict import Rdict

        ingest = {}
        for state_id, writer in self.writers.items():
            writer.finish()
            ingest[state_id] = os.path.join(self.folder, f"ingest-{state_id}.sst")
        path = os.path.join(self.folder, "db")
        db = Rdict(path, self.options, column_families={name: self.options for name in self.state_names})
        try:
            for state_id, file in sorted(ingest.items()):
                db.get_column_family(self.state_names[state_id]).ingest_external_file([file])
        finally:
            db.close()
        for file in ingest.values():
            os.remove(file)
        return [(name, os.path.join(path, name)) for name in sorted(os.listdir(path))
                if name.endswith(".sst") or name.startswith(KEPT_FILES)]

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
