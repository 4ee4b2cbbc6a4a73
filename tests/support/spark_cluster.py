"""A Spark standalone cluster on loopback for the cluster tests: one master, two one-core workers.

Started from the installed PySpark's own classes (``bin/spark-class``), each
daemon in a process group of its own, with its logs, work and scratch folders
in one temporary folder; :meth:`SparkCluster.stop` ends the groups it started
and removes that folder. Ports are picked free, never fixed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

WORKERS = 2
WORKER_MEMORY = "1g"
START_TIMEOUT = 120.0
# The daemons, the executors and the drivers of the suite's commands (each application's JVMs,
# living seconds) compile with C1 only and collect with the serial collector: on two cores, C2's
# compiling costs more than it gives back.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class ClusterError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def daemon_command(cls: str, *args: str) -> list[str]:
    """``spark-class <cls> args``; ``java -cp <pyspark jars>/* <cls>`` if spark-class is missing."""
    home = spark_home()
    script = home / "bin" / "spark-class"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), cls, *args]
    java = shutil.which("java") or "java"
    return [java, "-Xmx512m", "-cp", str(home / "jars" / "*"), cls, *args]


class SparkCluster:
    """A running standalone cluster; :attr:`master_url` is what ``--master`` takes."""

    def __init__(self, workers: int = WORKERS, memory: str = WORKER_MEMORY):
        self.root = Path(tempfile.mkdtemp(prefix="spark-cluster-"))
        self.processes: list[subprocess.Popen] = []
        self.port, self.ui_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.workers, self.memory = workers, memory
        self.tmp = self.root / "tmp"  # TMPDIR of the daemons, their executors and Python workers
        self.tmp.mkdir()
        # what the suite's commands on the cluster read as spark-defaults.conf (`client_env`)
        self.conf_dir = self.root / "conf"
        self.conf_dir.mkdir()
        (self.conf_dir / "spark-defaults.conf").write_text(f"spark.executor.extraJavaOptions {QUICK_JVM}\n"
                                                           f"spark.driver.extraJavaOptions {QUICK_JVM}\n")

    def start(self) -> "SparkCluster":
        try:
            self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(self.port), "--webui-port", str(self.ui_port))
            for i in range(self.workers):
                work = self.root / f"worker-{i}"
                work.mkdir()
                self._spawn(f"worker-{i}", "org.apache.spark.deploy.worker.Worker",
                            "--host", "127.0.0.1", "--port", str(free_port()),
                            "--webui-port", str(free_port()), "--cores", "1",
                            "--memory", self.memory, "--work-dir", str(work), self.master_url,
                            local_dirs=work / "scratch")
            self._await_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, cls: str, *args: str, local_dirs: Path | None = None) -> None:
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(self.root / "logs"), "SPARK_PID_DIR": str(self.root),
               "SPARK_NO_DAEMONIZE": "1", "SPARK_DAEMON_MEMORY": "512m", "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
               # executors' Python workers: the suite's interpreter, scratch data in the cluster's folder
               "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(self.tmp),
               "SPARK_LOCAL_DIRS": str(local_dirs or self.root / "scratch")}
        log = open(self.root / f"{name}.log", "wb")
        with log:
            self.processes.append(subprocess.Popen(
                daemon_command(cls, *args), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, start_new_session=True))

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
            return json.load(r)

    def _await_workers(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for p in self.processes:
                if p.poll() is not None:
                    raise ClusterError(f"a Spark daemon ended with {p.returncode}:\n{self.logs()}")
            try:
                alive = [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= self.workers:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise ClusterError(f"{self.workers} workers did not register within {START_TIMEOUT:.0f} s:"
                           f"\n{self.logs()}")

    @property
    def client_env(self) -> dict[str, str]:
        """The environment of a command run on this cluster: its driver's and executors' JVM options."""
        return {"SPARK_CONF_DIR": str(self.conf_dir)}

    def statectl_temp_entries(self) -> list[str]:
        """What statectl left in the executors' temporary directory (nothing, if all is well)."""
        return sorted(p.name for p in self.tmp.iterdir() if p.name.startswith("statectl-"))

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        """End every process group started here (workers first), then remove the folder."""
        for p in reversed(self.processes):
            _end_group(p, signal.SIGTERM)
        for p in reversed(self.processes):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _end_group(p, signal.SIGKILL)
                p.wait(timeout=20)
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _end_group(p: subprocess.Popen, sig: int) -> None:
    """Signal *p*'s process group (its own session: the daemon and what it forked, e.g. executors)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
