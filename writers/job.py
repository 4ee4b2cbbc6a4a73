"""The driver side of one write: run Spark jobs, collect handles, clean up after failure.

Every data file of one write carries the write's token in its name, and a
marker file ``_writing-<token>.json`` says who is writing. So the driver can
remove every file of a failed write (also those of tasks killed too hard to
clean up after themselves), the orphans of retried task attempts after a
successful one, and the leftovers of an earlier write whose process died.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid

from statectl.readers.owner import alive, claim
from statectl.statefmt.errors import StatectlError, first_line
from statectl.statefmt.fs import Location
from statectl.statefmt.outputs import WRITE_MARKER_PREFIX

from .errors import WriteFailedError, from_spark_error


# Session settings while a write job runs: sort-based aggregation (its sort also gives the
# key-group order the files need, where hash aggregation would sort twice), and larger
# Arrow batches into the Python tasks.
JOB_CONF = {
    "spark.sql.execution.useObjectHashAggregateExec": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
}


def write_token(write_id: str) -> str:
    """The mark every file name of one write carries, so its files can be found and removed."""
    return f"w{write_id[:12]}"



class WriteSession:
    """Files written into one output location by one write; see the module doc."""

    def __init__(self, spark, out: Location, on_job=None):
        self.spark = spark
        self.on_job = on_job  # called with each job's description before it runs
        self.out = out
        self.write_id = uuid.uuid4().hex
        self.token = write_token(self.write_id)
        self.jobs = _JobGroup.of(spark, self.token)
        self.marker = out.child(f"{WRITE_MARKER_PREFIX}{self.token}.json")
        self.removed_leftovers = 0
        self.made_out = False  # whether this write made the output folder (a failed one removes it)

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        if self.spark is not None:
            claim(self.spark)  # its tasks on this machine end with this process
        self.made_out = not self.out.exists()
        self.out.make_dirs()
        self.removed_leftovers = remove_dead_writes(self.out)
        self.marker.write_bytes_atomically(json.dumps({
            "write_id": self.write_id, "host": socket.gethostname(), "pid": os.getpid(),
        }).encode())

    def collect(self, df, description: str) -> list[dict]:
        """Run the job writing *df*'s files; the rows it returns (its files' handles), as dicts."""
        if self.on_job is not None:
            self.on_job(description)
        self.jobs.enter(description)
        try:
            with _conf(self.spark, JOB_CONF):
                rows = df.collect()
        except Exception as e:
            error = from_spark_error(e)
            if error is not None:
                raise error from None
            raise WriteFailedError(f"writing {description} failed: {first_line(e)}") from e
        finally:
            self.jobs.leave()
        return [r.asDict() for r in rows]

    def fail(self) -> None:
        """Remove every file of this write (the output then holds no trace of it), and the
        output folder itself if this write made it.

        The write's Spark jobs are cancelled first and their tasks awaited, so no task
        begins a file after the clean-up. Should a task outlive the wait, the marker
        stays, and a later write into the output removes the rest once this process is gone.
        """
        stopped = self._stop_jobs()
        remove_write_files(self.out, self.token)
        if stopped:
            self.marker.delete_file()
            if self.made_out and not self.out.list_files():
                self.out.delete_dir()

    def _stop_jobs(self, timeout: float = 60.0) -> bool:
        """Cancel this write's jobs; whether all their tasks ended within *timeout* seconds."""
        try:
            return self.jobs.cancel(timeout)
        except Exception:  # the JVM or the server is gone: so are its tasks
            return True

    def finish(self, referenced: set[str]) -> None:
        """After the commit: remove files of this write that `_metadata` does not reference."""
        for path in self.out.list_files():
            if self.token in path and path not in referenced and not path.startswith(WRITE_MARKER_PREFIX):
                self.out.child(path).delete_file()
        self.marker.delete_file()


@contextlib.contextmanager
def _conf(spark, settings: dict[str, str]):
    """*settings* applied to the session for the duration of a job, then restored."""
    if spark is None:
        yield
        return
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


class _JobGroup:
    """The Spark jobs of one write, named by its token so a failed write can cancel them: a job
    group of a classic session (cancelled and awaited through the status tracker), a tag of a
    Spark Connect session (its operations interrupted; the server kills their tasks)."""

    def __init__(self, spark, token: str):
        self.spark, self.token = spark, token

    @staticmethod
    def of(spark, token: str) -> "_JobGroup":
        if spark is None:
            return _JobGroup(None, token)
        from statectl.readers.files import is_connect

        return (_ConnectJobs if is_connect(spark) else _ClassicJobs)(spark, token)

    def enter(self, description: str) -> None:
        """The jobs this thread starts from now on belong to the write."""

    def leave(self) -> None:
        """... no longer."""

    def cancel(self, timeout: float) -> bool:
        return True


class _ClassicJobs(_JobGroup):
    def enter(self, description: str) -> None:
        self.spark.sparkContext.setJobGroup(self.token, description, interruptOnCancel=True)

    def leave(self) -> None:
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            self.spark.sparkContext.setLocalProperty(key, None)

    def cancel(self, timeout: float) -> bool:
        sc = self.spark.sparkContext
        sc.cancelJobGroup(self.token)
        tracker = sc.statusTracker()
        deadline = time.monotonic() + timeout
        while _running_tasks(tracker, self.token):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True


class _ConnectJobs(_JobGroup):
    GRACE = 3.0  # seconds: see cancel

    def enter(self, description: str) -> None:
        self.spark.addTag(self.token)

    def leave(self) -> None:
        self.spark.removeTag(self.token)

    def cancel(self, timeout: float) -> bool:
        """The client sees no tasks: the write's operations still running are interrupted (the
        server runs every operation interruptible), and the killed tasks of this and of failed
        jobs are given `GRACE` seconds to end before the write's files are removed: Spark looks
        at a killed task every 2 s and then kills its Python worker, at once on the warm
        engine (`spark.python.task.killTimeout`, `cli/engine_server.py`)."""
        self.spark.interruptTag(self.token)
        time.sleep(min(self.GRACE, timeout))
        return True


def _running_tasks(tracker, group: str) -> int:
    """Tasks still running in the jobs of *group* (cancelled jobs' tasks end a little later)."""
    running = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            running += stage.numActiveTasks if stage is not None else 0
    return running


def remove_write_files(out: Location, token: str) -> int:
    count = 0
    for path in out.list_files():
        if token in path and not path.startswith(WRITE_MARKER_PREFIX):
            out.child(path).delete_file()
            count += 1
    return count


def remove_dead_writes(out: Location) -> int:
    """Remove the files of earlier writes into *out* whose process is known to be dead.

    Only writes started on this host can be checked; others are left alone.
    """
    removed = 0
    for path in out.list_files():
        if "/" in path or not path.startswith(WRITE_MARKER_PREFIX):
            continue
        marker = out.child(path)
        try:
            info = json.loads(marker.read_bytes())
            host, pid = info["host"], int(info["pid"])
        except (StatectlError, ValueError, KeyError, TypeError):
            continue
        if host != socket.gethostname() or alive(pid):
            continue
        token = path[len(WRITE_MARKER_PREFIX):].removesuffix(".json")
        removed += remove_write_files(out, token)
        marker.delete_file()
    return removed
