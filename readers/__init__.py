"""Savepoints as Spark DataFrames: every kind of state, through one table source per format.

Each operator's tables are read by the table source of its format (`readers.sources`):
Parquet files by Spark's own reader, other splits by one Python Data Source whose tasks
run the decoder the local engine (`readers.local`) runs in-process.

    from statectl.readers import open_savepoint
    sp = open_savepoint(spark, "s3://bucket/savepoints/sp-42")
    sp.catalogue().show()
    sp.keyed("counter", states=["count"]).groupBy("count").count().show()
    sp.sql("SELECT * FROM `source.offsets`")

Importing this package does not import or start Spark.
"""

from .catalogue import CATALOGUE_VIEW
from .diff import SavepointDiff, diff_savepoints
from .local_reader import LocalSavepointReader, SparkRequiredError
from .reader import SavepointReader, open_savepoint
from .resolve import TableChoice, choose_table, find_operator

__all__ = ["open_savepoint", "SavepointReader", "LocalSavepointReader", "SparkRequiredError", "TableChoice", "choose_table", "find_operator",
           "CATALOGUE_VIEW", "diff_savepoints", "SavepointDiff"]
