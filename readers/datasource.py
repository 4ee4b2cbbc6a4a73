"""A state table as a Spark DataFrame: one Python Data Source, its splits in partitions.

Spark cannot read RocksDB files or Flink streams, so their table sources' splits are
decoded in Spark's tasks by a Python Data Source: the driver plans the splits
(:meth:`TableSource.splits`) on the model it has loaded and hands them over in an option,
grouped into no more partitions than Spark runs tasks at once (:func:`group_splits`), and a
task runs the source's :meth:`TableSource.decode` on each split of its partition, the decoder
the local engine runs too. The table's schema is declared up front (the ``ddl``
option), so Spark's planning (in a Python process of its own) neither infers a schema nor
loads the savepoint again. The source is registered once per Spark session. Parquet files
are read by Spark's own reader where its filesystems reach them.
"""

from __future__ import annotations

import base64
import json
import pickle

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .files import read_splits, spark_ddl, spark_opens
from .owner import watching
from .tablesource import TableSource
from .worker import task_started

SOURCE_NAME = "statectl_splits"

_registered: set[int] = set()


class SplitPartition(InputPartition):
    """Consecutive splits of a table source of *format*, read one after the other."""

    def __init__(self, index: int, format: str, splits: list):
        super().__init__(index)
        self.format, self.splits = format, splits


class SplitReader(DataSourceReader):
    """Options: ``savepoint`` (location), ``operator_id``, ``table`` (keyed, timers, or an
    operator state's name), ``ddl``, ``format``, ``splits`` (the splits, pickled, base64) and
    ``key_groups`` (a JSON list: the rows of other key groups are skipped)."""

    def __init__(self, options):
        self.location = options["savepoint"]
        self.operator_id = options["operator_id"]
        self.table = options["table"]
        self.format = options["format"]
        self.splits = options["splits"]
        groups = options.get("key_groups")
        self.key_groups = None if groups is None else json.loads(groups)

    def partitions(self):
        return [SplitPartition(i, self.format, group)
                for i, group in enumerate(pickle.loads(base64.b64decode(self.splits)))]

    def read(self, partition):
        import pyarrow as pa

        from .sources import source_class

        task_started()
        if not getattr(partition, "splits", None):  # a read of no splits
            return
        source = source_class(partition.format)(self.location, self.operator_id)
        target = None
        with watching():  # a command killed outright does not leave its reads running
            for split in partition.splits:
                for batch in source.decode(split, self.table, self.key_groups):
                    if target is None:  # Spark's declared schema has nullable top-level columns
                        target = _nullable(source.spark_types(batch.schema))
                    yield pa.RecordBatch.from_arrays(
                        [c.cast(f.type) if c.type != f.type else c for c, f in zip(batch.columns, target)],
                        schema=target)


class SplitSource(DataSource):
    """The schema is the ``ddl`` option; the reader is a :class:`SplitReader`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return self.options["ddl"]

    def reader(self, schema):
        return SplitReader(self.options)


def _nullable(schema):
    import pyarrow as pa

    return pa.schema([pa.field(f.name, f.type, True) for f in schema])


def split_frame(spark, source: TableSource, table: str, groups: list[int] | None = None):
    """*table* of *source* read through :class:`SplitSource` (only the splits holding *groups*)."""
    options = split_options(source, table, groups, default_parallelism(spark))
    return _reader(spark).options(**options).load()


def default_parallelism(spark) -> int | None:
    """How many tasks *spark* runs at once: its SparkContext's default parallelism, or over
    Spark Connect (no SparkContext) ``spark.default.parallelism`` if the server sets it (the
    warm engine's does: `cli.engine_server.server_conf`); None if not known."""
    try:
        return spark.sparkContext.defaultParallelism
    except Exception:  # a Connect session has no SparkContext
        value = spark.conf.get("spark.default.parallelism", None)
        return int(value) if value and value.isdigit() and int(value) > 0 else None


def read_nothing(spark) -> None:
    """A read of no splits through :class:`SplitSource`: each of Spark's Python workers that
    create the source, plan its read and run its tasks serves one request. Spark ends a worker
    idle for a minute; the warm engine's server reads nothing while it waits for commands, so
    the next command's read finds its workers started (`cli.engine_server`)."""
    nothing = {"ddl": "n INT", "savepoint": "", "operator_id": "", "table": "", "format": "",
               "splits": _pickled([])}
    _reader(spark).options(**nothing).load().collect()


def _reader(spark):
    """``spark.read`` of :class:`SplitSource`, registered once per Spark session."""
    if id(spark) not in _registered:
        spark.dataSource.register(SplitSource)
        _registered.add(id(spark))
    return spark.read.format(SOURCE_NAME)


def split_options(source: TableSource, table: str, groups: list[int] | None = None,
                  parallelism: int | None = None) -> dict[str, str]:
    """The :class:`SplitReader` options of *table* of *source*: its splits (those holding
    *groups*) planned here, on the loaded model, in at most *parallelism* partitions (None:
    one each)."""
    splits = source.splits(table, groups)
    weights = [source.split_bytes(s, table)[0] for s in splits]
    options = {"ddl": spark_ddl(source.spark_types(source.schema(table))), "savepoint": source.location,
               "operator_id": source.operator_id, "table": table, "format": str(source.format),
               "splits": _pickled(group_splits(splits, weights, parallelism or len(splits)))}
    if groups is not None:
        options["key_groups"] = json.dumps(sorted(groups))
    return options


def group_splits(splits: list, weights: list[int], parts: int) -> list[list]:
    """*splits* in at most *parts* runs of consecutive splits (their order kept: a table's
    rows stay in key-group order), the runs' *weights* (bytes) as even as cutting at the even
    shares allows. Each of Spark's tasks costs round trips to a Python worker, so no more tasks
    than run at once (a warm 10M-key `sql`, twelve splits on two cores: 4.00 s in two tasks
    against 4.22 s in twelve, medians in one run; docs/ENGINE.md)."""
    if parts >= len(splits):
        return [[s] for s in splits]
    if not sum(weights):
        weights = [1] * len(splits)
    total = sum(weights)
    runs, run, done = [], [], 0
    for split, weight in zip(splits, weights):
        # a run ends once its middle passes its even share's end (each run holds one split at least)
        if run and (done + weight / 2) * parts / total >= len(runs) + 1 and len(runs) < parts - 1:
            runs.append(run)
            run = []
        run.append(split)
        done += weight
    return runs + [run]


def _pickled(groups: list[list]) -> str:
    """The ``splits`` option: the partitions' splits pickled, base64 (:meth:`SplitReader.partitions`
    reads it)."""
    return base64.b64encode(pickle.dumps(groups)).decode("ascii")


def table_frame(spark, source: TableSource, table: str, groups: list[int] | None = None,
                span: tuple[int, int] | None = None, verify=None):
    """(DataFrame, checked splits) of *table*: its files checked first by *verify* (if
    given), then read by Spark's Parquet reader where the source says so and Spark's
    filesystems can open the files (``s3://`` needs Hadoop's S3A jars), else by the Data
    Source. Rows outside *groups* or *span* are left to the caller to filter."""
    parts = source.checked_files(table, span)
    if verify is not None:
        verify(parts)
    if source.parquet_read(table) and spark_opens(spark, parts):
        return read_splits(spark, source.schema(table), source.splits(table, groups, span)), parts
    return split_frame(spark, source, table, groups), parts
