"""statectl's canonical format as a table source: every table is Parquet files, one split each.

Keyed files are sorted by key group and each records its key-group range, so a read of
some key groups takes only the files meeting their span. Spark reads the splits with its
own Parquet reader after they are checked; the local engine decodes them here, each
verified (size, sha256, footer) before it is read.

Sizes come from the files' footers: a file's bytes are exact (`_metadata` records them), its
rows per key group are exact (a row group of one key group by its ``_key_group`` statistics,
another by its ``_key_group`` column alone), and a key group's bytes are an estimate: the
file's bytes apportioned by the row groups' compressed sizes, within a row group by rows
(exact only for a file of one key group). A page decodes only the row groups whose
``_key_group`` statistics meet its key groups.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from statectl.statefmt.canonical import files_for_range, keyed_schema, operator_state_schema, timers_schema
from statectl.statefmt.model import KEY_GROUP_COLUMN, DataFile
from statectl.statefmt.vocabulary import Format

from .files import Split, splits
from .resolve import KEYED, TIMERS
from .tablesource import Measure, TableSource, apportion, in_span


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

    def decode(self, split: Split, table: str, groups: list[int] | None = None,
               keys: list[tuple] | None = None) -> Iterator[pa.RecordBatch]:
        """The rows of one Parquet file, verified (size, sha256, schema) before they are read."""
        from statectl.statefmt.canonical import check_parquet
        from statectl.statefmt.integrity import verify_file

        verify_file(split.location, split.file)
        with split.location.open_input_file() as source:
            pf = check_parquet(split.location, source, split.schema, split.file)
            for i in range(pf.num_row_groups):
                yield from pf.read_row_group(i).to_batches()

    def split_key_groups(self, split: Split) -> tuple[int, int] | None:
        return split.file.key_groups

    def split_bytes(self, split: Split, table: str) -> tuple[int, bool]:
        return split.file.size, True

    def measure(self, split, table: str, counted=None) -> Measure:
        """A file's rows from `_metadata` (operator state) or its footer and ``_key_group``
        column (keyed, timers), checked against `_metadata` (rows, key-group range; the
        checksum is not computed: no value is read; *counted* is not needed)."""
        if not isinstance(split, Split):  # another layout's split (a subclass's)
            return super().measure(split, table, counted)
        size, rng = split.file.size, split.file.key_groups
        if rng is None:
            empty = np.zeros(0, dtype=np.int64)
            return Measure(None, None, split.file.rows, size, True, empty, empty, empty, False)
        groups, rows, weights = _parquet_groups(split, self.operator.max_parallelism)
        return Measure(rng, None, int(rows.sum()), size, True, groups, rows, apportion(size, weights),
                       len(groups) == 1)

    def decode_span(self, split, table: str, span: tuple[int, int]) -> Iterator[pa.RecordBatch]:
        """The row groups of a keyed file meeting *span* (by their ``_key_group`` statistics),
        the file verified (size, sha256) once per source."""
        if not isinstance(split, Split):
            yield from super().decode_span(split, table, span)
            return
        from statectl.statefmt.canonical import check_parquet
        from statectl.statefmt.integrity import verify_file

        if split.location.uri not in self._verified:
            verify_file(split.location, split.file)
            self._verified.add(split.location.uri)
        with split.location.open_input_file() as source:
            pf = check_parquet(split.location, source, split.schema, split.file)
            for i, (lo, hi) in enumerate(_row_group_ranges(pf)):
                if lo <= span[1] and hi >= span[0]:
                    for batch in pf.read_row_group(i).to_batches():
                        batch = in_span(batch, span)
                        if batch.num_rows:
                            yield batch

    def key_groups(self, keys: list[tuple]) -> list[int]:
        from statectl.statefmt.keygroups import key_group_for_key

        op = self.operator
        return sorted({key_group_for_key(list(k), op.keyed.key_types, op.max_parallelism) for k in keys})

    def parquet_read(self, table: str) -> bool:
        return True


def _row_group_ranges(pf) -> list[tuple[int, int]]:
    """(min, max) ``_key_group`` of each row group of a keyed file (`check_parquet` has
    checked that every row group has them)."""
    column = pf.schema_arrow.get_field_index(KEY_GROUP_COLUMN)
    return [(pf.metadata.row_group(i).column(column).statistics.min,
             pf.metadata.row_group(i).column(column).statistics.max) for i in range(pf.num_row_groups)]


def _parquet_groups(split: Split, max_parallelism: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key groups, rows, byte weights) of a keyed file: a row group of one key group counted
    by its statistics, another by reading its ``_key_group`` column; a row group's weight is
    its compressed size, shared by its key groups in proportion to their rows."""
    from statectl.statefmt.canonical import check_parquet
    from statectl.statefmt.integrity import check_size

    check_size(split.location, split.file)
    rows = np.zeros(max_parallelism, dtype=np.int64)
    weights = np.zeros(max_parallelism, dtype=np.float64)
    with split.location.open_input_file() as source:
        pf = check_parquet(split.location, source, split.schema, split.file)
        for i, (lo, hi) in enumerate(_row_group_ranges(pf)):
            meta = pf.metadata.row_group(i)
            if lo == hi:
                counts = np.zeros(max_parallelism, dtype=np.int64)
                counts[lo] = meta.num_rows
            else:
                column = pf.read_row_group(i, columns=[KEY_GROUP_COLUMN]).column(0).to_numpy()
                counts = np.bincount(column, minlength=max_parallelism)[:max_parallelism]
            rows += counts
            stored = sum(meta.column(j).total_compressed_size for j in range(meta.num_columns))
            weights += stored * counts / max(meta.num_rows, 1)
    present = np.flatnonzero(rows)
    return present, rows[present], weights[present]
