"""Savepoints as Spark DataFrames: every kind of state, read by Spark's own Parquet reader.

    from statectl.readers import open_savepoint
    sp = open_savepoint(spark, "s3://bucket/savepoints/sp-42")
    sp.catalogue().show()
    sp.keyed("counter", states=["count"]).groupBy("count").count().show()
    sp.sql("SELECT * FROM `source.offsets`")

Importing this package does not import or start Spark.
"""

from .catalogue import CATALOGUE_VIEW
from .diff import SavepointDiff, diff_savepoints
from .reader import SavepointReader, open_savepoint
from .resolve import TableChoice, choose_table, find_operator

__all__ = ["open_savepoint", "SavepointReader", "TableChoice", "choose_table", "find_operator",
           "CATALOGUE_VIEW", "diff_savepoints", "SavepointDiff"]
