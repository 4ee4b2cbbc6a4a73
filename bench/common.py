"""What the benchmark scripts share: a local Spark session, alternating timed runs, the driver's RSS.

The scripts are run as ``python bench/bench_x.py`` and put this folder on
``sys.path`` to import it.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from typing import Callable


def session(app_name: str | None = None, master: str = "local[2]", *,
            driver_memory: str | None = "6g", arrow: bool = True, extra_conf: dict | None = None):
    """A local SparkSession for a benchmark.

    Python workers run this interpreter; no UI, no console progress bars, UTC
    session time zone, log level ERROR. *driver_memory* ``None`` keeps Spark's
    default; *arrow* sets ``spark.sql.execution.arrow.pyspark.enabled``;
    *extra_conf* adds any other settings.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master)
    if app_name:
        builder = builder.appName(app_name)
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC"}
    if driver_memory:
        conf["spark.driver.memory"] = driver_memory
    if arrow:
        conf["spark.sql.execution.arrow.pyspark.enabled"] = "true"
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rss_mib(pid: int | str = "self") -> float:
    """The resident set size of a process (this one by default), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class RssSampler:
    """Peak RSS of this (driver) process while a block runs."""

    def __init__(self):
        self.peak = 0.0
        self._stop = threading.Event()

    def __enter__(self):
        self.start = rss_mib()
        self.peak = self.start
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    def _loop(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mib())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.end = rss_mib()


def alternating_medians(cases: dict[str, Callable[[], object]], repeat: int
                        ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each case run *repeat* times, the cases alternating (so a slow phase of a shared
    machine hits all of them): every case's times in seconds, and their medians."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times, {name: statistics.median(ts) for name, ts in times.items()}
