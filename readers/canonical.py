"""statectl's canonical format as a table source: every table is Parquet files, one split each.

Keyed files are sorted by key group and each records its key-group range, so a read of
some key groups takes only the files meeting their span. Spark reads the splits with its
own Parquet reader after they are checked; the local engine decodes them here, each
verified (size, sha256, footer) before it is read.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from statectl.statefmt.canonical import files_for_range, keyed_schema, operator_state_schema, timers_schema
from statectl.statefmt.model import DataFile
from statectl.statefmt.vocabulary import Format

from .files import Split, splits
from .resolve import KEYED, TIMERS
from .tablesource import TableSource


class CanonicalSource(TableSource):
    format = Format.CANONICAL

    def schema(self, table: str) -> pa.Schema:
        if table == KEYED:
            return keyed_schema(self.operator.keyed)
        if table == TIMERS:
            return timers_schema(self.operator.keyed)
        return operator_state_schema(self.operator_state(table))

    def table_files(self, table: str) -> list[DataFile]:
        if table == KEYED:
            return list(self.operator.keyed.files)
        if table == TIMERS:
            return list(self.operator.keyed.timers)
        return list(self.operator_state(table).files)

    def splits(self, table: str, groups: list[int] | None = None,
               span: tuple[int, int] | None = None) -> list[Split]:
        """One split per file; with a *span* (a key filter's: its first and last group),
        the files meeting it."""
        files = self.table_files(table)
        if span is None and groups:
            span = (groups[0], groups[-1])
        if span is not None:
            files = files_for_range(files, span[0], span[1])
        return splits(self.savepoint, files, self.schema(table))

    def checked_files(self, table: str, span: tuple[int, int] | None = None) -> list[Split]:
        return self.splits(table, span=span)

    def decode(self, split: Split, table: str, groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
        """The rows of one Parquet file, verified (size, sha256, schema) before they are read."""
        from statectl.statefmt.canonical import check_parquet
        from statectl.statefmt.integrity import verify_file

        verify_file(split.location, split.file)
        with split.location.open_input_file() as source:
            pf = check_parquet(split.location, source, split.schema, split.file)
            for i in range(pf.num_row_groups):
                yield from pf.read_row_group(i).to_batches()

    def key_groups(self, keys: list[tuple]) -> list[int]:
        from statectl.statefmt.keygroups import key_group_for_key

        op = self.operator
        return sorted({key_group_for_key(list(k), op.keyed.key_types, op.max_parallelism) for k in keys})

    def parquet_read(self, table: str) -> bool:
        return True
