"""One subtask's keyed state as a native RocksDB snapshot, the files Flink's RocksDB and ForSt
backends open as their own database when they restore.

The entries are the canonical stream's (`stream_write.EntryAssembler`: the same key bytes,
key-group prefix first, and the same value bytes, a list's elements joined with ``,``), but
each state's go into a column family of its own name, as the backends keep them. Each state's
entries arrive in key order (key group, then key bytes) and are appended to an SST file of
their own as they come (`statefmt.rocksdb.sst.SstFamily`, which the own format's native writer uses
too); :meth:`NativeSnapshotBuilder.finish` ingests them into a new database with a column
family for every state (Flink opens exactly the column families its meta information names,
empty ones too), checkpoints it and returns the checkpoint's files by their RocksDB names: the
SST files, ``MANIFEST``, ``CURRENT`` and ``OPTIONS``, what a native savepoint of Flink holds.

The tables are written as the oldest backend reads them: block-based format version 4 and
CRC32C checksums, which FRocksDB 6.20 (Flink 1.17 to 1.20) reads as well as Flink 2.x's
RocksDB and ForSt. Every entry is a plain value (no merge operands), as in a compacted
database.
"""

from __future__ import annotations

import os

import numpy as np

from ..bytecolumns import fixed, join_rows
from ..rocksdb.sst import SstFamily, build_checkpoint
from ..scratch import new_scratch_dir, remove_scratch_dir
from .stream_write import Entries, StreamState, key_group_prefixes

FORMAT_VERSION = 4
KEPT_FILES = ("CURRENT", "MANIFEST-", "OPTIONS-")  # with every *.sst: a snapshot's database


def flink_rocksdb_options():
    """Options creating a database whose tables every Flink release's backend reads."""
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
    """A RocksDB database with a column family per header state *states* (in a scratch folder
    of its own), fed :class:`Entries` in stream order; :meth:`finish` gives its files,
    :meth:`close` removes the folder."""

    def __init__(self, states: list[StreamState], prefix_width: int):
        self.states = states
        self.prefix_width = prefix_width
        self.folder = new_scratch_dir("native")
        self.options = flink_rocksdb_options()
        self.families = [SstFamily(s.name, os.path.join(self.folder, f"s{i}.sst"), self.options)
                         for i, s in enumerate(states)]
        self.entries = 0

    def add(self, entries: Entries | None) -> None:
        """Complete key groups' entries, each state's appended to its file."""
        if entries is None:
            return
        keys = join_rows([fixed(key_group_prefixes(entries.key_groups, self.prefix_width)), entries.keys])
        for state_id in np.unique(entries.state_ids):
            pick = np.flatnonzero(entries.state_ids == state_id)
            family = self.families[int(state_id)]
            family.add(keys.take(pick), entries.values.take(pick), entries.key_groups[pick])
            family.flush(self.states[int(state_id)].what)
        self.entries += len(entries)

    def finish(self) -> list[tuple[str, str]]:
        """The database's files: (RocksDB name, path), in name order."""
        checkpoint, _ = build_checkpoint(self.families, self.folder, self.options, self.options)
        return [(name, os.path.join(checkpoint, name)) for name in sorted(os.listdir(checkpoint))
                if name.endswith(".sst") or name.startswith(KEPT_FILES)]

    def close(self) -> None:
        remove_scratch_dir(self.folder)
