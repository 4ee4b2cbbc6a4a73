"""Progress bars of Spark jobs on standard error, fed by Spark's status tracker
(:class:`statectl.writers.progress.ProgressWatcher`).

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
    from statectl.writers.progress import ProgressWatcher

    bars = progress_bars(transient=True, redirect=False)  # rows stay on standard output
    task = bars.add_task(description, total=None)

    def show(job) -> None:
        bars.update(task, completed=job.done, total=job.total or None)

    stdout = sys.stdout
    if stdout.isatty():
        sys.stdout = _EndsOnOutput(stdout, bars.stop)
    try:
        with bars, ProgressWatcher(spark, show) as watcher:
            watcher.job_started(description)
            yield
    finally:
        sys.stdout = stdout


class _EndsOnOutput:
    """Standard output while a bar shows on the same terminal: the first write ends the bar."""

    def __init__(self, stream, end):
        self._stream, self._end = stream, end

    def write(self, text: str) -> int:
        self._end()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)
