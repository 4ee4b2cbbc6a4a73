"""Apache Flink savepoints as a table source: one split per subtask stream (or key-group range).

A split (`statefmt.flink.describe.FlinkSplit`) is self-contained: a Spark task decodes it
with `read_split` without `_metadata`, so the driver alone reads `_metadata` and the stream
headers. The batches have the format layer's table schema; Spark is shown the types it takes
(`statefmt.flink.model.spark_arrow_type`). Flink files carry no checksums: only their sizes
are checked. A key's group is Flink's, from the operator's Java (or SQL row) key type.

Sizes: a keyed stream's handle holds every key group's offset, so a key group's bytes are
exact (as stored: compressed if the stream is), and so is a split's (its key groups' bytes,
and the stream's header for the split holding its first key group: a stream's splits sum to
its size). Keyed state and timers lie in the same streams, so both tables show the same
bytes. A native RocksDB snapshot's split has its files' bytes (exact), apportioned to its key
groups by rows (an estimate). Rows per key group are counted from the decoded rows (exact).
An operator state's split has the bytes of its elements in its subtask's stream (exact).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from statectl.statefmt.errors import KeyTypeError
from statectl.statefmt.flink.handles import IncrementalRocksDB
from statectl.statefmt.model import NAMESPACE_COLUMN, DataFile
from statectl.statefmt.vocabulary import Format

from .files import Split, splits
from .resolve import KEYED, TIMERS
from .tablesource import Measure, TableSource, count_groups, keyed_part


class FlinkSource(TableSource):
    format = Format.FLINK
    timer_columns = ("timestamp", "domain", "service")  # and the timer service's name

    @property
    def info(self):
        """The Flink description of the operator (`statefmt.flink.describe.FlinkOperatorInfo`)."""
        from statectl.statefmt.flink.model import flink_savepoint

        return flink_savepoint(self.savepoint).operator(self.operator_id)

    def timer_namespace(self) -> list[str]:
        """The timers' own namespace (an interval join's side, a window), whatever the states' is."""
        schema = self.info.timers_schema
        return [NAMESPACE_COLUMN] if schema is not None and NAMESPACE_COLUMN in schema.names else []

    def schema(self, table: str) -> pa.Schema:
        return self.info.table_schema(table)

    def table_files(self, table: str) -> list[DataFile]:
        if keyed_part(table):
            return list(self.operator.keyed.files)
        return list(self.operator_state(table).files)

    def splits(self, table: str, groups: list[int] | None = None,
               span: tuple[int, int] | None = None) -> list:
        """Keyed: the splits holding *groups* (none for timers without a timer service);
        operator state: every subtask's stream, one copy of a broadcast state."""
        info = self.info
        if table == TIMERS and info.timers_schema is None:
            return []
        if keyed_part(table):
            return [s for s in info.keyed_splits_holding(groups)
                    if span is None or (s.key_groups[0] <= span[1] and s.key_groups[1] >= span[0])]
        if info.coordinator is not None and table == info.coordinator.name:
            return [info.coordinator.split]
        broadcast = info.operator_states[table].kind == "broadcast"
        return info.operator_splits[:1] if broadcast else list(info.operator_splits)

    def checked_files(self, table: str, span: tuple[int, int] | None = None) -> list[Split]:
        return splits(self.savepoint, self.table_files(table), None)  # sizes only

    def decode(self, split, table: str, groups: list[int] | None = None,
               keys: list[tuple] | None = None) -> Iterator[pa.RecordBatch]:
        from statectl.statefmt.flink.savepoint import read_split

        prefixes = ()
        if keys and table == KEYED and isinstance(split.handle, IncrementalRocksDB):
            # a lookup in a native RocksDB snapshot reads its keys' blocks only
            from statectl.statefmt.flink.key_prefix import entry_prefixes

            prefixes = entry_prefixes(self.info.key_type, keys, self._groups_of(keys), self.operator.max_parallelism)
        return read_split(split, table, None if groups is None else set(groups), prefixes=prefixes)

    def split_key_groups(self, split) -> tuple[int, int] | None:
        return split.key_groups

    def split_subtask(self, split) -> int | None:
        return split.subtask

    def split_bytes(self, split, table: str) -> tuple[int, bool]:
        from statectl.statefmt.flink.describe import operator_state_bytes, stream_share
        from statectl.statefmt.flink.handles import KeyGroupsStream

        handle = split.handle
        if split.kind == "coordinator":
            return handle.size, True
        if split.key_groups is None:
            return operator_state_bytes(handle, table), True
        if isinstance(handle, KeyGroupsStream):
            return stream_share(handle, split.key_groups), True
        return handle.meta.size + sum(s.size for _, s in handle.files), True

    def inline_bytes(self) -> int:
        """Streams below Flink's memory threshold, held inline in `_metadata`."""
        from statectl.statefmt.flink.describe import inline_bytes

        return inline_bytes(self.info)

    def measure(self, split, table: str, counted=None) -> Measure:
        """A keyed stream's split: bytes per key group from the handle's offsets (exact)."""
        from statectl.statefmt.flink.describe import key_group_bytes
        from statectl.statefmt.flink.handles import KeyGroupsStream

        if split.key_groups is None or not isinstance(split.handle, KeyGroupsStream):
            return super().measure(split, table, counted)
        size, _ = self.split_bytes(split, table)
        counted, rows = counted or count_groups(self.decode(split, table), self.operator.max_parallelism)
        groups, stored = key_group_bytes(split.handle, split.key_groups)
        groups, stored = groups[stored > 0], stored[stored > 0]
        union = np.union1d(groups, counted)
        all_rows = np.zeros(len(union), dtype=np.int64)
        all_rows[np.searchsorted(union, counted)] = rows
        all_bytes = np.zeros(len(union), dtype=np.int64)
        all_bytes[np.searchsorted(union, groups)] = stored
        return Measure(split.key_groups, split.subtask, int(rows.sum()), size, True, union, all_rows,
                       all_bytes, True)

    def key_groups(self, keys: list[tuple]) -> list[int]:
        return sorted(set(self._groups_of(keys)))

    def _groups_of(self, keys: list[tuple]) -> list[int]:
        """Each key's key group, by Flink's hash."""
        from statectl.statefmt.flink.keyhash import flink_key_group
        from statectl.statefmt.flink.model import java_key_type
        from statectl.statefmt.flink.rowdata import RowData
        from statectl.statefmt.flink.rowdata_keys import row_key_group

        op, key_type = self.operator, self.info.key_type
        if isinstance(key_type, RowData):  # a SQL operator's key row
            try:
                return [row_key_group(k, key_type.fields, op.max_parallelism) for k in keys]
            except KeyTypeError as e:
                raise KeyTypeError(f"operator {op.label}: key filter: {e}") from None
        java = java_key_type(key_type, op.label)
        return [flink_key_group(k if isinstance(java, tuple) else k[0], java, op.max_parallelism) for k in keys]

    def spark_types(self, schema: pa.Schema) -> pa.Schema:
        from statectl.statefmt.flink.model import spark_schema

        return spark_schema(schema)
