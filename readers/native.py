"""Native (RocksDB) savepoints into DataFrames: a Python Data Source, one partition per subtask.

Spark cannot read RocksDB files, so a Python Data Source decodes them
(`statectl.statefmt.rocksdb.rows`) and yields Arrow batches with the canonical table's
schema; the DataFrame is then the one a canonical savepoint gives. Files are
verified (size, sha256) inside the tasks as they are fetched.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceReader, InputPartition

from statectl.statefmt.canonical import keyed_schema, timers_schema
from statectl.statefmt.model import Operator, Savepoint

from .datasource import DdlSource, source_reader
from .files import spark_ddl

SOURCE_NAME = "statectl_native"


class SubtaskPartition(InputPartition):
    def __init__(self, first: int, last: int):
        super().__init__((first, last))
        self.first, self.last = first, last


class NativeReader(DataSourceReader):
    def __init__(self, options):
        self.location = options["savepoint"]
        self.operator_id = options["operator_id"]
        self.timers = options["table"] == "timers"

    def _operator(self) -> tuple[Savepoint, Operator]:
        from statectl.statefmt.ids import OperatorRef
        from statectl.statefmt.formats import load

        sp = load(self.location)
        return sp, sp.operator(OperatorRef(operator_id=self.operator_id))

    def partitions(self):
        from statectl.statefmt.rocksdb.files import subtask_databases

        _, op = self._operator()
        return [SubtaskPartition(lo, hi) for lo, hi in sorted(subtask_databases(op))]

    def read(self, partition):
        import pyarrow as pa

        from statectl.statefmt.rocksdb.rows import read_subtask

        sp, op = self._operator()
        for batch in read_subtask(sp, op, (partition.first, partition.last), self.timers):
            # Spark's declared schema has nullable top-level columns
            yield pa.RecordBatch.from_arrays(batch.columns, schema=_nullable(batch.schema))


class NativeSource(DdlSource):
    """Options: ``savepoint`` (location), ``operator_id``, ``table`` (keyed or timers), ``ddl``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    reader_class = NativeReader


def _nullable(schema):
    import pyarrow as pa

    return pa.schema([pa.field(f.name, f.type, True) for f in schema])


def native_table(spark, sp: Savepoint, op: Operator, timers: bool = False):
    """The whole keyed (or timer) table of a native operator, as a DataFrame."""
    schema = timers_schema(op.keyed) if timers else keyed_schema(op.keyed)
    return (source_reader(spark, NativeSource, spark_ddl(schema))
            .option("savepoint", sp.location).option("operator_id", op.operator_id)
            .option("table", "timers" if timers else "keyed").load())
