"""statectl's native (RocksDB) format as a table source: one split per subtask's database.

Keyed state and timers lie in one RocksDB database per key-group range, decoded by
`statectl.statefmt.rocksdb.rows` into batches of the canonical table's schema, so the
tables are those a canonical savepoint gives. Spark cannot read RocksDB files: its tasks
run the decoder through the Data Source, and the files are verified (size, sha256) as the
tasks fetch them. Operator state is canonical Parquet, read as the canonical source does.

Sizes: a database's bytes are exact (the sizes `_metadata` records of its files), and are
those of both the keyed table and the timers (one database holds both); rows per key group
are counted from the decoded rows (exact); a key group's bytes are the database's bytes
apportioned by rows (an estimate). A page scans only its key groups of a database.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from statectl.statefmt.model import DataFile
from statectl.statefmt.vocabulary import Format

from .canonical import CanonicalSource
from .files import Split
from .resolve import TIMERS
from .tablesource import keyed_part


class NativeSource(CanonicalSource):
    """A keyed split is the key-group range ``(first, last)`` of one subtask's database."""

    format = Format.ROCKSDB

    def table_files(self, table: str) -> list[DataFile]:
        if keyed_part(table):  # the databases hold both
            return list(self.operator.keyed.files)
        return super().table_files(table)

    def splits(self, table: str, groups: list[int] | None = None,
               span: tuple[int, int] | None = None) -> list:
        if not keyed_part(table):
            return super().splits(table, groups, span)
        from statectl.statefmt.rocksdb.files import subtask_databases

        return [(lo, hi) for lo, hi in sorted(subtask_databases(self.operator))
                if (groups is None or any(lo <= g <= hi for g in groups))
                and (span is None or (lo <= span[1] and hi >= span[0]))]

    def split_key_groups(self, split) -> tuple[int, int] | None:
        return tuple(split) if isinstance(split, tuple) else super().split_key_groups(split)

    def split_subtask(self, split) -> int | None:
        """A database's subtask: its place among the operator's databases, by key groups."""
        if not isinstance(split, tuple):
            return super().split_subtask(split)
        from statectl.statefmt.rocksdb.files import subtask_databases

        return sorted(subtask_databases(self.operator)).index(tuple(split))

    def split_bytes(self, split, table: str) -> tuple[int, bool]:
        if not isinstance(split, tuple):
            return super().split_bytes(split, table)
        from statectl.statefmt.rocksdb.files import subtask_databases

        return sum(f.size for f in subtask_databases(self.operator)[tuple(split)]), True

    def decode_span(self, split, table: str, span: tuple[int, int]) -> Iterator[pa.RecordBatch]:
        if not isinstance(split, tuple):
            return super().decode_span(split, table, span)
        from statectl.statefmt.rocksdb.rows import read_subtask

        return read_subtask(self.savepoint, self.operator, split, table == TIMERS, span=span)

    def checked_files(self, table: str, span: tuple[int, int] | None = None) -> list[Split]:
        return [] if keyed_part(table) else super().checked_files(table, span)

    def decode(self, split, table: str, groups: list[int] | None = None,
               keys: list[tuple] | None = None) -> Iterator[pa.RecordBatch]:
        if not keyed_part(table):
            return super().decode(split, table, groups)
        from statectl.statefmt.rocksdb.rows import read_subtask

        return read_subtask(self.savepoint, self.operator, split, table == TIMERS)

    def parquet_read(self, table: str) -> bool:
        return not keyed_part(table)
