"""Progress of the Spark jobs of a write, from Spark's status tracker (no rendering here)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable


@dataclass
class JobProgress:
    description: str
    done: int = 0
    total: int = 0

    def complete(self) -> "JobProgress":
        """Shown done: a job's last report may come before its last tasks end."""
        self.total = max(self.total, 1)
        self.done = self.total
        return self


class ProgressWatcher:
    """Polls Spark's status tracker and reports (description, done tasks, total tasks).

    The writer tells it which job it starts (:meth:`job_started`); a
    background thread calls *report* with the tasks of the active jobs.
    """

    def __init__(self, spark, report: Callable[[JobProgress], None], interval: float = 0.25):
        self.tracker = spark.sparkContext.statusTracker()
        self.report = report
        self.interval = interval
        self.current: JobProgress | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._lock = threading.Lock()

    def job_started(self, description: str) -> None:
        with self._lock:
            if self.current is not None:
                self._finish(self.current)
            self.current = JobProgress(description)
            self.report(self.current)

    def _finish(self, job: JobProgress) -> None:
        self.report(job.complete())

    def _poll(self) -> None:
        done = total = 0
        for job_id in self.tracker.getActiveJobsIds():
            info = self.tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info else ():
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        with self._lock:
            job = self.current
            if job is not None and total:
                job.done, job.total = done, total
                self.report(job)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # the session may be stopping; progress is best effort
                pass

    def __enter__(self) -> "ProgressWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self.current is not None and exc[0] is None:
                self._finish(self.current)
