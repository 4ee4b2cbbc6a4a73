"""Flink savepoints into DataFrames: a Python Data Source, one partition per split.

A split (`statefmt.flink.describe.FlinkSplit`: one subtask stream, or a
key-group range of one) is pickled into its partition and decoded in the
executor by `read_split`; the driver only reads `_metadata` and stream headers.
The batches have the format layer's table schema, with the types Spark takes
(`statefmt.flink.model.spark_arrow_type`).
"""

from __future__ import annotations

import json

from pyspark.sql.datasource import DataSourceReader, InputPartition

from statectl.statefmt.model import Operator, Savepoint

from .datasource import DdlSource, source_reader
from .files import spark_ddl

SOURCE_NAME = "statectl_flink"


class SplitPartition(InputPartition):
    def __init__(self, split):
        super().__init__(split.subtask)
        self.split = split


class FlinkReader(DataSourceReader):
    def __init__(self, options):
        self.location = options["savepoint"]
        self.operator_id = options["operator_id"]
        self.table = options["table"]
        self.one_copy = options.get("one_copy") == "true"
        groups = options.get("key_groups")
        self.key_groups = None if groups is None else json.loads(groups)

    def partitions(self):
        from statectl.statefmt.flink.savepoint import open_flink_savepoint

        op = open_flink_savepoint(self.location).operator(self.operator_id)
        if self.table in ("keyed", "timers"):
            chosen = op.keyed_splits_holding(self.key_groups)
        else:
            chosen = op.operator_splits[:1] if self.one_copy else op.operator_splits
        return [SplitPartition(s) for s in chosen]

    def read(self, partition):
        import pyarrow as pa

        from statectl.statefmt.flink.model import spark_schema
        from statectl.statefmt.flink.savepoint import read_split

        split = partition.split
        target = None
        groups = None if self.key_groups is None else set(self.key_groups)
        for batch in read_split(split, self.table, groups):
            if target is None:
                target = spark_schema(batch.schema)
            yield pa.RecordBatch.from_arrays(
                [c.cast(f.type) if c.type != f.type else c for c, f in zip(batch.columns, target)],
                schema=target)


class FlinkSource(DdlSource):
    """Options: ``savepoint``, ``operator_id``, ``table`` (keyed, timers, or an operator
    state's name), ``ddl``, ``one_copy`` (broadcast: the first subtask only) and
    ``key_groups`` (a JSON list: only these key groups are opened)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    reader_class = FlinkReader


def _frame(spark, sp: Savepoint, op: Operator, table: str, schema, key_groups=None, one_copy=False):
    from statectl.statefmt.flink.model import spark_schema

    reader = (source_reader(spark, FlinkSource, spark_ddl(spark_schema(schema)))
              .option("savepoint", sp.location).option("operator_id", op.operator_id)
              .option("table", table).option("one_copy", "true" if one_copy else "false"))
    if key_groups is not None:
        reader = reader.option("key_groups", json.dumps(sorted(key_groups)))
    return reader.load()


def flink_keyed_table(spark, sp: Savepoint, op: Operator, timers: bool = False, key_groups=None):
    """The keyed (or timers) table of a Flink operator, every column the format layer gives.

    *key_groups*: only these key groups (a key filter's), only the splits holding them.
    """
    from statectl.statefmt.flink.model import flink_savepoint

    table = "timers" if timers else "keyed"
    schema = flink_savepoint(sp).operator(op.operator_id).table_schema(table)
    return _frame(spark, sp, op, table, schema, key_groups)


def flink_operator_state(spark, sp: Savepoint, op: Operator, name: str):
    """An operator state of a Flink operator: list and union every subtask's entries
    (the union once), broadcast one copy."""
    from statectl.statefmt.flink.model import flink_savepoint

    info = flink_savepoint(sp).operator(op.operator_id)
    broadcast = info.operator_states[name].kind == "broadcast"
    return _frame(spark, sp, op, name, info.table_schema(name), one_copy=broadcast)
