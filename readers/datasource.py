"""What statectl's Python Data Sources share: a schema declared as DDL, registered once.

Spark cannot read RocksDB files or Flink streams, so those are decoded by Python
Data Sources (`readers.native`, `readers.flink`). Each declares the table's
schema up front (the ``ddl`` option, so Spark never infers it) and is
registered once per Spark session.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource

_registered: set[tuple[int, str]] = set()


class DdlSource(DataSource):
    """A source whose schema is its ``ddl`` option and whose reader is ``reader_class(options)``."""

    reader_class: type

    def schema(self) -> str:
        return self.options["ddl"]

    def reader(self, schema):
        return self.reader_class(self.options)


def source_reader(spark, source: type[DdlSource], ddl: str):
    """``spark.read`` of *source* with its schema; the source is registered on first use."""
    key = (id(spark), source.name())
    if key not in _registered:
        spark.dataSource.register(source)
        _registered.add(key)
    return spark.read.format(source.name()).option("ddl", ddl)
