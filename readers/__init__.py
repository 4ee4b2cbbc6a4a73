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

from importlib import import_module

# Each name and the module it is taken from, imported on first use (PEP 562): a command that
# needs one reader module (`stats`, a local `read`) does not import the others (`diff`'s pandas).
_EXPORTS = {
    "open_savepoint": ".reader", "SavepointReader": ".reader",
    "LocalSavepointReader": ".local_reader", "SparkRequiredError": ".local_reader",
    "TableChoice": ".resolve", "choose_table": ".resolve", "find_operator": ".resolve",
    "CATALOGUE_VIEW": ".catalogue", "diff_savepoints": ".diff", "SavepointDiff": ".diff",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
