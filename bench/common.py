"""What the benchmark scripts share: a local Spark session, alternating timed runs, the driver's RSS,
the machine's load.

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

# The scripts time whole `statectl` processes and the CPU of their process tree: each command with
# a Spark of its own. The warm engine, the default, would run the work in a server outside that
# tree; bench_warm.py chooses each command's engine itself (it compares the two).
os.environ.setdefault("STATECTL_ENGINE", "classic")


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes (``os.getloadavg``), as printed at the
    start and at the end of every measurement: on a shared machine they say how far to trust it."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


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


def _processes() -> tuple[dict[int, int], dict[int, float], dict[int, float], dict[int, str]]:
    """Every process's parent, own CPU seconds (user + system), CPU seconds with its reaped
    children's, and command name, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, own, cpu, comm = {}, {}, {}, {}
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                name, fields = f.read().rsplit(")", 1)
        except OSError:
            continue
        rest = fields.split()
        parent[pid], comm[pid] = int(rest[1]), name.split("(", 1)[1]
        own[pid] = sum(int(x) for x in rest[11:13]) / tick  # utime + stime
        cpu[pid] = sum(int(x) for x in rest[11:15]) / tick  # and cutime + cstime
    return parent, own, cpu, comm


def _descends(pid: int, root: int, parent: dict[int, int]) -> bool:
    up = parent.get(pid)
    while up not in (None, 0, 1, root):
        up = parent.get(up)
    return up == root


def process_tree_cpu() -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process ("driver") and by its
    descendants, split into the JVM ("jvm") and everything else, Spark's Python workers
    ("workers"). Unlike wall time, this does not depend on what else the machine runs
    (processes that ended are counted in their parent, once reaped)."""
    parent, _, cpu, comm = _processes()
    me = os.getpid()
    totals = {"driver": cpu.get(me, 0.0), "jvm": 0.0, "workers": 0.0}
    for pid in cpu:
        if pid != me and _descends(pid, me, parent):
            totals["jvm" if comm[pid] == "java" else "workers"] += cpu[pid]
    return totals


class TreeCpuSampler:
    """CPU seconds of a child process and all its descendants while it runs, sampled every
    *interval* s: each process's own last-seen user + system seconds (a descendant that is
    never reaped by a waiting parent, like the JVM a PySpark process starts, escapes
    ``getrusage``). A process's last *interval* before it ends is missed."""

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid, self.interval, self.seen = pid, interval, {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self):
        while True:
            parent, own, _, _ = _processes()
            for pid, seconds in own.items():
                if pid == self.pid or _descends(pid, self.pid, parent):
                    self.seen[pid] = seconds
            if self._stop.wait(self.interval):
                return

    def stop(self) -> float:
        """The CPU seconds of the tree."""
        self._stop.set()
        self._t.join()
        return sum(self.seen.values())


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


def alternating_medians(cases: dict[str, Callable[[], object]], repeat: int,
                        cpu: dict[str, list[dict[str, float]]] | None = None
                        ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each case run *repeat* times, the cases alternating (so a slow phase of a shared
    machine hits all of them): every case's times in seconds, and their medians.

    With *cpu* (a dict), each run's :func:`process_tree_cpu` differences are appended
    to ``cpu[case]``."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            before = process_tree_cpu() if cpu is not None else None
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
            if cpu is not None:
                after = process_tree_cpu()
                cpu.setdefault(name, []).append({k: after[k] - before[k] for k in after})
    return times, {name: statistics.median(ts) for name, ts in times.items()}


def user_events_operator(spark, keys: int, parallelism: int):
    """The Flink write benches' operator ``proc``: *keys* String keys ``user-N``, a Long value
    state ``count`` and a String list state ``events`` (one element each), at max parallelism
    128; its input cached and counted, so a timed write reads it from memory."""
    from statectl.writers import KeyedData, ListState, OperatorData, ValueState

    df = spark.range(keys).selectExpr(
        "concat('user-', CAST(id AS STRING)) AS user", "id * 7 % 100000 AS n",
        "concat('event-', CAST(id % 1000 AS STRING)) AS event").cache()
    df.count()
    keyed = KeyedData(key=["user"], data=df, states=[ValueState("count", column="n"),
                                                     ListState("events", column="event")])
    return OperatorData("proc", parallelism, 128, keyed)
