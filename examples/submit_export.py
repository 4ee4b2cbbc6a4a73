"""Export one operator's keyed table to Parquet: statectl's Python API in a Spark application.

    spark-submit --master spark://host:7077 examples/submit_export.py SAVEPOINT UID OUTPUT

The savepoint and the output must be reachable from every executor (a shared
filesystem or an object store), and statectl installed in the Python the
executors run (PYSPARK_PYTHON).
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from statectl import open_savepoint


def main(savepoint: str, uid: str, output: str) -> None:
    spark = SparkSession.builder.appName("statectl-export").getOrCreate()
    try:
        open_savepoint(savepoint, spark=spark).keyed(uid).write.parquet(output)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
