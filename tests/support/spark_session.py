"""The suite's one Spark session, shared by the tests and by in-process `statectl` runs."""

from __future__ import annotations

import os
import sys

LOG_LEVEL = "ERROR"
SUITE_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def suite_spark():
    """The suite's local Spark session (small: tests use small data), started on first use.

    Calling it again returns the same session and sets its runtime SQL options back to these.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("statectl-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        # many small jobs in a JVM living minutes: C2's compiling costs more than it gives back
        # (a run of the writer and reader tests: 48-62 s instead of 93-104 s, in turns)
        .config("spark.driver.extraJavaOptions", SUITE_JVM_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel(LOG_LEVEL)
    return session


def running_spark():
    """The Spark session running in this process, or None (without importing Spark).

    Not ``SparkSession.getActiveSession()``: that asks the JVM thread serving this
    Python thread, and a broken gateway connection (an interrupted call) moves it.
    """
    if "pyspark.sql" not in sys.modules:
        return None
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        return None
    return SparkSession.builder.getOrCreate()


def stop_suite_spark() -> None:
    session = running_spark()
    if session is not None:
        session.stop()
