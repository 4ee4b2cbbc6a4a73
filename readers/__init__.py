"""Internal: savepoints as tables. The public API is ``statectl`` (its ``__all__``); the modules
and names of this package may move.

    from statectl import open_savepoint
    sp = open_savepoint("s3://bucket/savepoints/sp-42", spark=spark)   # DataFrames
    sp.keyed("counter", states=["count"]).groupBy("count").count().show()
    sp.sql("SELECT * FROM `source.offsets`")
    open_savepoint("s3://bucket/savepoints/sp-42").keyed("counter")     # pyarrow.Table, no Spark

Each operator's tables are read by the table source of its format (`readers.sources`):
with a session (`readers.reader.SavepointReader`), Parquet files by Spark's own reader and
other splits by one Python Data Source whose tasks run the decoder the local engine
(`readers.local`) runs in-process; without one (`readers.local_reader.LocalSavepointReader`),
every split by that local engine. Both name tables through `readers.naming.NamedTables`.

Importing this package does not import or start Spark.
"""

from .catalogue import CATALOGUE_VIEW
from .diff import SavepointDiff, diff_savepoints
from .local_reader import LocalSavepointReader, SparkRequiredError
from .reader import SavepointReader, open_savepoint
from .resolve import TableChoice, choose_table, find_operator

__all__ = ["open_savepoint", "SavepointReader", "LocalSavepointReader", "SparkRequiredError", "TableChoice",
           "choose_table", "find_operator", "CATALOGUE_VIEW", "diff_savepoints", "SavepointDiff"]
