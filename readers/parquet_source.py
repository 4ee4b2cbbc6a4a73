"""Parquet files Spark's own filesystems cannot open, read through pyarrow's.

Spark reads statectl's canonical Parquet files itself (``spark.read.parquet``), through
Hadoop's filesystems. An ``s3://`` savepoint needs Hadoop's S3A filesystem for that, whose
jars are not part of PySpark; pyarrow has S3 built in. So when the session cannot open a
split's scheme, a Python Data Source reads the files in the tasks with pyarrow, one
partition per file, with the same declared schema, and the DataFrame is the same.
"""

from __future__ import annotations

import json

from pyspark.sql.datasource import DataSourceReader, InputPartition

from .datasource import DdlSource, source_reader

SOURCE_NAME = "statectl_parquet"

_openable: dict[tuple[int, str], bool] = {}


def spark_can_open(spark, scheme: str) -> bool:
    """Whether the session's Hadoop configuration has a filesystem for *scheme* (e.g. ``s3a``)."""
    key = (id(spark), scheme)
    if key not in _openable:
        jvm = spark.sparkContext._jvm
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
                scheme, spark.sparkContext._jsc.hadoopConfiguration())
            _openable[key] = True
        except Exception:  # py4j's error for UnsupportedFileSystemException or a missing class
            _openable[key] = False
    return _openable[key]


class FilePartition(InputPartition):
    def __init__(self, uri: str):
        super().__init__(uri)
        self.uri = uri


class ParquetFilesReader(DataSourceReader):
    def __init__(self, options, columns: list[str]):
        self.files = json.loads(options["files"])
        self.columns = columns

    def partitions(self):
        return [FilePartition(uri) for uri in self.files]

    def read(self, partition):
        import pyarrow as pa
        import pyarrow.parquet as pq

        from statectl.statefmt.fs import Location

        with Location(partition.uri).open_input_file() as f:
            for batch in pq.ParquetFile(f).iter_batches(columns=self.columns):
                batch = batch.select(self.columns)
                # Spark's declared schema has nullable top-level columns
                yield pa.RecordBatch.from_arrays(batch.columns, schema=pa.schema(
                    [f.with_nullable(True) for f in batch.schema]))


class ParquetFilesSource(DdlSource):
    """Options: ``files`` (a JSON list of locations), ``ddl``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def reader(self, schema):
        return ParquetFilesReader(self.options, schema.fieldNames())


def parquet_files(spark, ddl: str, uris: list[str]):
    """A DataFrame of the rows of the Parquet files *uris*, read by pyarrow in Spark's tasks."""
    return source_reader(spark, ParquetFilesSource, ddl).option("files", json.dumps(uris)).load()
