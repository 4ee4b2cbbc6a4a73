"""Starting Spark for the commands that need it: local mode unless told otherwise.

Spark's own logging is kept off the terminal: the JVM's log4j level is set
to ERROR before the session starts and its stderr chatter is not shown.
"""

from __future__ import annotations

import os
import sys


def spark_session(master: str | None = None, app_name: str = "statectl"):
    """A SparkSession: *master* if given, else SPARK_MASTER / spark-submit's, else local[*]."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    chosen = master or os.environ.get("SPARK_MASTER")
    if chosen:
        builder = builder.master(chosen)
    elif "spark.master" not in _submitted_conf():
        builder = builder.master("local[*]")
    for key, value in DEFAULT_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Dlog4j2.level=ERROR",
    "spark.sql.shuffle.partitions": "8",
}


def _submitted_conf() -> str:
    """Settings spark-submit passes down to a Python driver, if any."""
    return os.environ.get("PYSPARK_SUBMIT_ARGS", "") + " " + os.environ.get("SPARK_CONF", "")
