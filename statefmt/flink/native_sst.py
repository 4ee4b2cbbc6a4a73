"""One subtask of a native RocksDB Flink snapshot, read from its SST files directly.

The same entries as :class:`rocksdb_native.RocksDBSnapshot` (what RocksDB itself
reads), without RocksDB and without a Python object per entry: every SST file
of the snapshot is read by `statefmt.rocksdb.sstread` (each names its column
family in its properties), the internal entries of a column family are taken
from all its files, sorted by user key and newest sequence number if the files
overlap, and resolved by a compiled kernel: the newest value wins, a deletion
hides what is older, and merge operands -- Flink's list states, written with
``StringAppendTESTOperator`` -- are joined with its ``,`` delimiter, oldest
first, after the value they apply to.

A snapshot's files are all live: Flink uploads the files of a RocksDB
checkpoint, which holds the current version only, so no MANIFEST is needed.
A file using a table feature the direct reader does not decode raises
:class:`UnsupportedSstFeature` (when the snapshot is opened, or when a column
family with an unknown value type or merge operator is read); the caller then
reads the whole snapshot through rocksdict instead (`savepoint._native_entries`).
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
from ..errors import FlinkFormatError, UnknownStateError
from ..fs import Location
from ..rocksdb.sstread import Entries, SstFile, SstFormatError, UnsupportedSstFeature, read_entries, successor
from .list_layout import LIST_DELIMITER, LIST_MERGE_OPERATORS
from .rocksdb_native import DEFAULT_CF, key_group_bounds

__all__ = ["SstSnapshot", "UnsupportedSstFeature"]


@dataclass
class LiveEntries:
    """The live entries of a column family, key *i* at ``data[key_starts[i]:key_ends[i]]`` and
    its value at ``data[value_starts[i]:value_ends[i]]``, in key order."""
    data: bytes
    key_starts: np.ndarray
    key_ends: np.ndarray
    value_starts: np.ndarray
    value_ends: np.ndarray


class SstSnapshot:
    """The SST files of one native snapshot, opened (footer, properties, index) at once."""

    def __init__(self, files: Iterable[tuple[str, "Location | str | os.PathLike"]], description: str):
        self._description = description
        self._stack = ExitStack()
        self._tables: dict[str, list[SstFile]] = {}
        try:
            for local, source in files:
                if not local.endswith(".sst"):
                    continue
                table = self._stack.enter_context(SstFile(Location.of(source), f"{Location.of(source)} ({local})"))
                if table.column_family != DEFAULT_CF:
                    self._tables.setdefault(table.column_family, []).append(table)
        except BaseException:
            self._stack.close()
            raise
        self.column_families: list[str] = sorted(self._tables)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def interleaved(self, column_family: str, batch_size: int | None = None,
                    key_groups: tuple[int, int] | None = None,
                    max_parallelism: int | None = None) -> Iterator[tuple[bytes, np.ndarray]]:
        """The live entries of one column family as one ``bytes`` (every key followed by its
        value) and the lengths of its parts (int64: key, value, key, ...), as
        :meth:`RocksDBSnapshot.interleaved` gives them (in one chunk: *batch_size* is
        accepted for that interface and not used)."""
        from ..bytecolumns import joined_slices

        found = self.live_entries(column_family, key_groups, max_parallelism)
        if found is None:
            return
        starts = np.column_stack((found.key_starts, found.value_starts)).ravel()
        lengths = np.column_stack((found.key_ends - found.key_starts, found.value_ends - found.value_starts)).ravel()
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        yield joined_slices(np.frombuffer(found.data, dtype=np.uint8), starts, offsets).tobytes(), lengths

    def live_entries(self, column_family: str, key_groups: tuple[int, int] | None = None,
                     max_parallelism: int | None = None, prefixes: tuple[bytes, ...] = ()) -> LiveEntries | None:
        """The live entries of one column family (in the key-group range; with *prefixes*, only
        those whose keys start with one of them: a key-group prefix and a key's bytes), where
        they lie: keys and values are not copied one by one, only joined merge operands are new."""
        if column_family not in self._tables:
            raise UnknownStateError(
                f"the RocksDB snapshot {self._description} has no column family {column_family!r}; "
                f"it has {', '.join(self.column_families) or 'none'}")
        from ..rocksdb.sstwalk import MERGE, in_order, live, merge_runs

        start, stop = key_group_bounds(key_groups, max_parallelism)
        ranges = [(p, successor(p)) for p in sorted(prefixes)] if prefixes else [(start, stop)]
        # files in the order of their first index keys: then non-overlapping files are in order
        tables = sorted(self._tables[column_family], key=lambda t: t.first_index_key)
        entries, runs = read_entries(tables, ranges)
        if not len(entries):
            return None
        if (entries.kinds == MERGE).any():
            self._check_merge_operator(column_family)
        if in_order(entries.keys, entries.key_starts, entries.key_ends, entries.seqs):
            order = np.arange(len(entries), dtype=np.int64)
        else:  # overlapping files (levels, or level 0): merge them
            for t, a, b in zip(tables, runs[:-1], runs[1:]):
                if not in_order(entries.keys, entries.key_starts[a:b], entries.key_ends[a:b], entries.seqs[a:b]):
                    raise SstFormatError(f"{t.name}: not a readable RocksDB table: keys out of order")
            order = merge_runs(entries.keys, entries.key_starts, entries.key_ends, entries.seqs, runs)
        keep = _starting_with(entries, prefixes) if prefixes else self._in_range(entries, start, stop, column_family)
        if keep is not None:
            order = order[keep[order]]
        found, bad = live(entries.keys, entries.key_starts, entries.key_ends, entries.kinds, entries.values,
                          entries.value_starts, entries.value_ends, order, LIST_DELIMITER)
        if found is None:
            raise UnsupportedSstFeature(
                f"the RocksDB snapshot {self._description}: column family {column_family!r} has an "
                f"entry of value type {int(entries.kinds[bad])}")
        firsts, value_starts, value_ends, joined = found
        if not len(firsts):
            return None
        shift = len(entries.keys)
        data = b"".join((entries.keys.data, entries.values.data, joined.data))
        return LiveEntries(data, entries.key_starts[firsts], entries.key_ends[firsts],
                           value_starts + shift, value_ends + shift)

    def _check_merge_operator(self, column_family: str) -> None:
        for t in self._tables[column_family]:
            if t.merge_operator not in LIST_MERGE_OPERATORS:
                raise UnsupportedSstFeature(f"{t.name}: merge operator {t.merge_operator or 'none'}")

    def _in_range(self, entries: Entries, start: bytes | None, stop: bytes | None,
                  column_family: str) -> np.ndarray | None:
        """Which entries' user keys lie in ``[start, stop)`` (None: all of them); the bounds
        are key-group prefixes, so this compares each key's first bytes as a number."""
        if start is None and stop is None:
            return None
        width = len(start if start is not None else stop)
        if len(entries) and (entries.key_ends - entries.key_starts).min() < width:
            raise FlinkFormatError(f"{self._description} column family {column_family}: "
                                   "a key shorter than its key-group prefix")
        group = np.zeros(len(entries), dtype=np.int64)
        for i in range(width):
            group = (group << 8) | entries.keys[entries.key_starts + i]
        keep = np.ones(len(entries), dtype=bool)
        if start is not None:
            keep &= group >= int.from_bytes(start, "big")
        if stop is not None:
            keep &= group < int.from_bytes(stop, "big")
        return keep


def _starting_with(entries: Entries, prefixes: tuple[bytes, ...]) -> np.ndarray:
    """Which entries' user keys start with one of *prefixes*."""
    keep = np.zeros(len(entries), dtype=bool)
    lengths = entries.key_ends - entries.key_starts
    for p in prefixes:
        match = lengths >= len(p)
        starts = entries.key_starts[match]
        same = np.ones(len(starts), dtype=bool)
        for i, byte in enumerate(p):
            same &= entries.keys[starts + i] == byte
        keep[np.flatnonzero(match)[same]] = True
    return keep
