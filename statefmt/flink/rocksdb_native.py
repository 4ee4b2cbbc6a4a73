"""One subtask of a native RocksDB Flink snapshot, opened read-only with rocksdict.

Flink's native RocksDB snapshots (handle ``IncrementalRemoteKeyedStateHandle``)
store a subtask's database files under UUID names and record each one's RocksDB
*local name* (``000034.sst``, ``MANIFEST-000005``, ``CURRENT``,
``OPTIONS-000031``). :func:`open_rocksdb_snapshot` puts the files into a fresh
temporary directory under their local names (a symbolic link for a local file, a
download otherwise), opens it read-only and yields the raw entries of every
column family but ``default``: one per state, timers included. Keys and values
are Flink's bytes, undecoded.

Flink's list states are RocksDB ``MERGE`` operands of ``StringAppendTESTOperator``.
rocksdict's default options have no merge operator, and then a list column family
reads as empty without any error; the column-family options therefore come from
the snapshot's own OPTIONS file (``Options.load_latest``), which names that
operator, and every scan ends with a check of the iterator's status. The
WAL directory is always the snapshot's own: Flink 1.17 and 1.20 record the
task's temporary ``wal_dir`` in OPTIONS, which no longer exists.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from itertools import chain, islice
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, StatectlError, UnknownStateError, UnsafeReferenceError
from ..fs import Location
from ..keygroups import check_max_parallelism
from ..scratch import new_scratch_dir
from .types import Buf

DEFAULT_CF = "default"
ENTRY_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary())])


def key_group_prefix_bytes(max_parallelism: int) -> int:
    """Bytes of the key-group prefix of Flink's RocksDB keys: 1 up to max parallelism
    128, else 2 (``CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix``)."""
    return 1 if check_max_parallelism(max_parallelism) <= 128 else 2


def key_group_bounds(key_groups: tuple[int, int] | None, max_parallelism: int | None
                     ) -> tuple[bytes | None, bytes | None]:
    """``[start, stop)`` key bounds of an inclusive key-group range (None: unbounded)."""
    if key_groups is None:
        return None, None
    if max_parallelism is None:
        raise TypeError("key_groups needs max_parallelism")
    width = key_group_prefix_bytes(max_parallelism)
    first, last = key_groups
    stop = (last + 1).to_bytes(width, "big") if last + 1 < 1 << (8 * width) else None
    return first.to_bytes(width, "big"), stop


def _check_local_name(name: str) -> str:
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name \
            or "\0" in name:
        raise UnsafeReferenceError(
            f"RocksDB file name {name!r} in a Flink snapshot is not a plain file name")
    return name


def _place(local_name: str, source: Location, directory: str) -> None:
    """Put *source* into *directory* as *local_name*: linked if local, else downloaded."""
    target = os.path.join(directory, local_name)
    if "://" not in source.uri:  # a local path
        if not os.path.isfile(source.path):
            source.size()  # raises MissingFileError naming the file
        try:
            os.symlink(os.path.abspath(source.path), target)
            return
        except OSError:
            pass  # no symbolic links here: copy below
    with open(target, "wb") as out:
        for chunk in source.iter_chunks():
            out.write(chunk)


class RocksDBSnapshot:
    """An opened native RocksDB snapshot; use :func:`open_rocksdb_snapshot`."""

    def __init__(self, directory: str, description: str):
        self.directory = directory
        self._description = description
        self._db = None
        from rocksdict import AccessType, Options, Rdict  # here: the direct SST reader needs none of it

        try:
            db_options, cf_options = Options.load_latest(directory)
            # Flink 1.x writes the task's own wal_dir (a temporary folder long gone) into
            # OPTIONS; a read-only open fails unless the WAL is looked for here instead.
            db_options.set_wal_dir(directory)
            self._db = Rdict(directory, db_options, column_families=cf_options,
                             access_type=AccessType.read_only())
            # in creation order, as the MANIFEST lists them
            self.column_families: list[str] = [
                n for n in Rdict.list_cf(directory, db_options) if n != DEFAULT_CF]
        except Exception as e:  # rocksdict raises plain exceptions
            self.close()
            raise FlinkFormatError(f"cannot open the RocksDB snapshot {description}: {e}") from None

    def entries(self, column_family: str | None = None,
                key_groups: tuple[int, int] | None = None,
                max_parallelism: int | None = None) -> Iterator[tuple[str, bytes, bytes]]:
        """``(column family, key, value)`` of every live entry, merges resolved, in key
        order per column family; one column family if named. *key_groups* ``(first,
        last)`` (with *max_parallelism*, which sets the prefix width) keeps only keys
        whose key-group prefix lies in that inclusive range."""
        if column_family is None:
            names = self.column_families
        elif column_family in self.column_families:
            names = [column_family]
        else:
            raise self._unknown(column_family)
        bounds = key_group_bounds(key_groups, max_parallelism)
        for name in names:
            for chunk in self._chunks(name, *bounds, 4096):
                for key, value in chunk:
                    yield name, key, value

    def record_batches(self, column_family: str, batch_size: int = 65536,
                       key_groups: tuple[int, int] | None = None,
                       max_parallelism: int | None = None) -> Iterator[pa.RecordBatch]:
        """The entries of one column family as Arrow batches of ``key`` and ``value``
        (binary; large_binary for a batch past 2 GiB), at most *batch_size* rows each, for
        columnar decoding."""
        for data, lengths in self.interleaved(column_family, batch_size, key_groups, max_parallelism):
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            buf = Buf(data, f"RocksDB snapshot {self._description}")
            keys = buf.slices(offsets[0:-1:2], offsets[1::2])
            values = buf.slices(offsets[1::2], offsets[2::2])
            yield pa.RecordBatch.from_arrays([keys, values], names=ENTRY_SCHEMA.names)

    def interleaved(self, column_family: str, batch_size: int = 65536,
                    key_groups: tuple[int, int] | None = None,
                    max_parallelism: int | None = None) -> Iterator[tuple[bytes, np.ndarray]]:
        """The entries of one column family in chunks of at most *batch_size*, each as one
        ``bytes`` (every key followed by its value) and the lengths of its parts (int64:
        key, value, key, ...): made with one ``bytes.join``, no Python step per entry."""
        if column_family not in self.column_families:
            raise self._unknown(column_family)
        for chunk in self._chunks(column_family, *key_group_bounds(key_groups, max_parallelism), batch_size):
            parts = list(chain.from_iterable(chunk))
            yield b"".join(parts), np.fromiter(map(len, parts), np.int64, len(parts))

    def _unknown(self, column_family: str) -> UnknownStateError:
        return UnknownStateError(
            f"the RocksDB snapshot {self._description} has no column family "
            f"{column_family!r}; it has {', '.join(self.column_families) or 'none'}")

    def _chunks(self, name: str, start: bytes | None, stop: bytes | None,
                size: int) -> Iterator[list[tuple[bytes, bytes]]]:
        """Lists of at most *size* ``(key, value)`` pairs in ``[start, stop)``, taken from
        rocksdict's ``items()`` without a Python step per entry."""
        from rocksdict import ReadOptions

        cf = self._db.get_column_family(name)
        bounds = ReadOptions()
        if stop is not None:
            bounds.set_iterate_upper_bound(stop)
        try:
            items = iter(cf.items(from_key=start, read_opt=bounds))
            last = None
            while chunk := list(islice(items, size)):
                last = chunk[-1][0]
                yield chunk
            # items() ends silently on a read error: tell the true end from an error
            self._check_end(cf, bounds, name, start, last)
        finally:
            del cf

    def _check_end(self, cf, bounds, name: str, start: bytes | None,
                   last: bytes | None) -> None:
        """Step past the last key read: an iterator that stopped at an error stops there
        again, and its status says why."""
        it = cf.iter(bounds)
        try:
            if last is not None:
                it.seek(last)
                if it.valid():
                    it.next()
            elif start is not None:
                it.seek(start)
            else:
                it.seek_to_first()
            if it.valid():  # only possible if an entry was skipped: never silently
                raise FlinkFormatError(
                    f"RocksDB snapshot {self._description}: column family {name!r} ended "
                    "before its last entry")
            try:
                it.status()
            except Exception as e:
                raise FlinkFormatError(
                    f"RocksDB snapshot {self._description}: cannot read column family "
                    f"{name!r}: {e}") from None
        finally:
            del it

    def close(self) -> None:
        db, self._db = getattr(self, "_db", None), None
        if db is not None:
            db.close()
            del db


@contextmanager
def open_rocksdb_snapshot(files: Iterable[tuple[str, "Location | str | os.PathLike"]],
                          workdir: "str | os.PathLike | None" = None) -> Iterator[RocksDBSnapshot]:
    """Open one subtask's RocksDB snapshot from ``(local name, file)`` pairs.

    The files go into a new temporary directory (below *workdir* if given), which is
    removed on exit, also after an error."""
    pairs = [(_check_local_name(n), Location.of(src)) for n, src in files]
    names = [n for n, _ in pairs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise FlinkFormatError(f"a Flink RocksDB snapshot names {', '.join(duplicates)} twice")
    current = dict(pairs).get("CURRENT")
    if current is None:
        raise FlinkFormatError(f"a Flink RocksDB snapshot of {len(pairs)} files has no CURRENT file")
    description = f"({len(pairs)} files, CURRENT is {current.uri})"
    directory = new_scratch_dir("flink-rocksdb", workdir)
    snapshot = None
    try:
        for name, source in pairs:
            try:
                _place(name, source, directory)
            except OSError as e:
                raise StatectlError(f"cannot copy {source.uri} into {directory}: {e}") from None
        snapshot = RocksDBSnapshot(directory, description)
        yield snapshot
    finally:
        if snapshot is not None:
            snapshot.close()
        shutil.rmtree(directory, ignore_errors=True)
