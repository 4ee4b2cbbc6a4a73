"""One data file to check and read (:class:`Split`), and how Spark's own reader gets to it.

A canonical table is a set of such splits (one Parquet file each: a key-group range of
keyed state or timers, or an operator state's file) read by ``spark.read.parquet`` with
the schema `_metadata` declares, so Spark plans one or more tasks per file and nothing
passes through the driver. Other formats' files are checked as splits without a schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from statectl.statefmt.fs import Location
from statectl.statefmt.model import DataFile, Savepoint
from statectl.statefmt.locations import file_location
from statectl.statefmt.types import from_arrow, quote_identifier, to_spark_ddl

_GLOB_CHARS = re.compile(r"([\\{}\[\]*?])")
# pyarrow and Hadoop spell some schemes differently.
_HADOOP_SCHEMES = {"s3": "s3a"}


@dataclass(frozen=True)
class Split:
    """One data file: where it lies, what `_metadata` records of it, its Arrow schema
    (None for a file that is not canonical Parquet: only size and checksum are checked)."""

    location: Location
    file: DataFile
    schema: pa.Schema | None


def splits(sp: Savepoint, files, schema: pa.Schema) -> list[Split]:
    """Splits for *files* of *sp*; shared files resolve into their base savepoint."""
    return [Split(file_location(sp, f.ref), f, schema) for f in files]


def hadoop_uri(loc: Location) -> str:
    """The URI Spark's (Hadoop) filesystems know *loc* by, unescaped."""
    uri = loc.uri
    if "://" not in uri:
        return "file://" + uri
    scheme, rest = uri.split("://", 1)
    return f"{_HADOOP_SCHEMES.get(scheme, scheme)}://{rest}"


def hadoop_scheme(loc: Location) -> str:
    """The scheme Spark's (Hadoop) filesystems know *loc* by (``file``, ``s3a``, ...)."""
    return hadoop_uri(loc).split("://", 1)[0]


def spark_path(loc: Location) -> str:
    """A path for ``spark.read``: glob characters escaped, since Spark globs its paths."""
    return _GLOB_CHARS.sub(r"\\\1", hadoop_uri(loc))


def split_key(loc: Location) -> tuple[str, str, str]:
    """(scheme, host, path) of a split's file, comparable with :func:`spark_file_key`."""
    scheme, rest = hadoop_uri(loc).split("://", 1)
    host, _, path = rest.partition("/")
    return scheme, host, "/" + path


def spark_file_key(uri: str) -> tuple[str, str, str]:
    """(scheme, host, path) of a URI from Spark's ``inputFiles()`` (percent-encoded)."""
    parts = urlsplit(uri)
    return parts.scheme, parts.netloc, unquote(parts.path)


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL of a file schema, so Spark never infers types from footers."""
    return ", ".join(
        f"{quote_identifier(f.name)} {to_spark_ddl(from_arrow(f.type))}" for f in schema
    )


def read_splits(spark, schema: pa.Schema, parts: list[Split]):
    """A DataFrame of the rows of *parts*, read by Spark's Parquet reader (not verified)."""
    ddl = spark_ddl(schema)
    if not parts:
        return spark.createDataFrame([], ddl)
    return spark.read.schema(ddl).parquet(*(spark_path(p.location) for p in parts))


_openable: dict[tuple[int, str], bool] = {}


def spark_can_open(spark, scheme: str) -> bool:
    """Whether the session's Hadoop configuration has a filesystem for *scheme*: ``s3a`` needs
    Hadoop's AWS jars, which PySpark does not ship."""
    key = (id(spark), scheme)
    if is_connect(spark):  # no JVM to ask: the file system every Spark has, else pyarrow in the tasks
        return scheme == "file"
    if key not in _openable:
        try:
            spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
                scheme, spark.sparkContext._jsc.hadoopConfiguration())
            _openable[key] = True
        except Exception:  # py4j's error for UnsupportedFileSystemException or a missing class
            _openable[key] = False
    return _openable[key]


def is_connect(spark) -> bool:
    """Whether *spark* is a Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark) -> int:
    """The cluster's default parallelism (its cores). A Spark Connect client has no SparkContext
    to ask: a range without a partition count is split into that many partitions, so one small
    query counts them."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    from pyspark.sql import functions as F

    return spark.range(1 << 16).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()[0] + 1


def spark_opens(spark, parts: list[Split]) -> bool:
    """Whether Spark's own filesystems can open every file of *parts*."""
    return all(spark_can_open(spark, s) for s in {hadoop_scheme(p.location) for p in parts})
