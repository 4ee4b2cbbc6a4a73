"""Apache Flink savepoints as a table source: one split per subtask stream (or key-group range).

A split (`statefmt.flink.describe.FlinkSplit`) is self-contained: a Spark task decodes it
with `read_split` without `_metadata`, so the driver alone reads `_metadata` and the stream
headers. The batches have the format layer's table schema; Spark is shown the types it takes
(`statefmt.flink.model.spark_arrow_type`). Flink files carry no checksums: only their sizes
are checked. A key's group is Flink's, from the operator's Java (or SQL row) key type.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from statectl.statefmt.errors import KeyTypeError
from statectl.statefmt.model import DataFile
from statectl.statefmt.vocabulary import Format

from .files import Split, splits
from .resolve import TIMERS
from .tablesource import TableSource, keyed_part


class FlinkSource(TableSource):
    format = Format.FLINK
    timer_columns = ("timestamp", "domain", "service")  # and the timer service's name

    @property
    def info(self):
        """The Flink description of the operator (`statefmt.flink.describe.FlinkOperatorInfo`)."""
        from statectl.statefmt.flink.model import flink_savepoint

        return flink_savepoint(self.savepoint).operator(self.operator_id)

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
            return info.keyed_splits_holding(groups)
        broadcast = info.operator_states[table].kind == "broadcast"
        return info.operator_splits[:1] if broadcast else list(info.operator_splits)

    def checked_files(self, table: str, span: tuple[int, int] | None = None) -> list[Split]:
        return splits(self.savepoint, self.table_files(table), None)  # sizes only

    def decode(self, split, table: str, groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
        from statectl.statefmt.flink.savepoint import read_split

        return read_split(split, table, None if groups is None else set(groups))

    def key_groups(self, keys: list[tuple]) -> list[int]:
        from statectl.statefmt.flink.keyhash import flink_key_group
        from statectl.statefmt.flink.model import java_key_type
        from statectl.statefmt.flink.rowdata import RowData
        from statectl.statefmt.flink.rowdata_keys import row_key_group

        op, key_type = self.operator, self.info.key_type
        if isinstance(key_type, RowData):  # a SQL operator's key row
            try:
                return sorted({row_key_group(k, key_type.fields, op.max_parallelism) for k in keys})
            except KeyTypeError as e:
                raise KeyTypeError(f"operator {op.label}: key filter: {e}") from None
        java = java_key_type(key_type, op.label)
        return sorted({flink_key_group(k if isinstance(java, tuple) else k[0], java, op.max_parallelism)
                       for k in keys})

    def spark_types(self, schema: pa.Schema) -> pa.Schema:
        from statectl.statefmt.flink.model import spark_schema

        return spark_schema(schema)
