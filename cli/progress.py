"""Progress bars of Spark jobs on standard error, fed by Spark's status tracker
(:class:`statectl.writers.progress.ProgressWatcher`), or over Spark Connect by the progress the
server reports with a query's results.

Writes show one bar per job (:func:`statectl.cli.writing.progress`); a read or a
query shows one transient bar while its scan runs, on a terminal only: with
standard error a pipe or a file it prints nothing at all.
"""

from __future__ import annotations

import contextlib
import sys


def progress_bars(transient: bool = False, redirect: bool = True):
    """A rich Progress on standard error: description, bar, done/total tasks, time. With
    *redirect*, what the program prints meanwhile goes above the bars, on standard error."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .output import make_console

    return Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                    MofNCompleteColumn(), TextColumn("tasks"), TimeElapsedColumn(),
                    console=make_console(stderr=True), transient=transient,
                    redirect_stdout=redirect, redirect_stderr=redirect)


@contextlib.contextmanager
def scan_progress(spark, description: str):
    """While the block runs Spark jobs, their tasks as one bar on a terminal's standard error.

    The bar goes away when the block ends, or before the first thing the block prints on a
    terminal's standard output (a table, JSON lines), so output and bar never mix.
    """
    if not sys.stderr.isatty():
        yield
        return
    bars = progress_bars(transient=True, redirect=False)  # rows stay on standard output
    task = bars.add_task(description, total=None)

    def show(job) -> None:
        bars.update(task, completed=job.done, total=job.total or None)

    stdout = sys.stdout
    if stdout.isatty():
        sys.stdout = _EndsOnOutput(stdout, bars.stop)
    try:
        with bars, watching(spark, show) as watcher:
            watcher.job_started(description)
            yield
    finally:
        sys.stdout = stdout


def watching(spark, show):
    """Spark's status tracker, or over Spark Connect (no SparkContext here) the progress the
    server sends with each query's results."""
    from statectl.readers.files import is_connect
    from statectl.writers.progress import JobProgress, ProgressWatcher

    if not is_connect(spark):
        return ProgressWatcher(spark, show)
    return _ConnectProgress(spark, show, JobProgress)


class _ConnectProgress:
    """A progress handler of a Spark Connect session: the tasks of the query's stages. As the
    status tracker's watcher does, a job is shown complete when the next starts or the block
    ends without error (the server's last report may come before its last tasks end)."""

    def __init__(self, spark, show, job_type):
        self.spark, self.show, self.job_type, self.job = spark, show, job_type, None

    def job_started(self, description: str) -> None:
        if self.job is not None:
            self._finish()
        self.job = self.job_type(description)
        self.show(self.job)

    def _finish(self) -> None:
        self.show(self.job.complete())

    def __call__(self, stages, inflight_tasks, operation_id, done) -> None:
        stages = list(stages or ())
        if stages and self.job is not None:
            self.job.done = sum(s.num_completed_tasks for s in stages)
            self.job.total = sum(s.num_tasks for s in stages)
            self.show(self.job)

    def __enter__(self):
        self.spark.registerProgressHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        self.spark.removeProgressHandler(self)
        if self.job is not None and exc[0] is None:
            self._finish()


class _EndsOnOutput:
    """Standard output while a bar shows on the same terminal: the first write ends the bar."""

    def __init__(self, stream, end):
        self._stream, self._end = stream, end

    def write(self, text: str) -> int:
        self._end()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)
