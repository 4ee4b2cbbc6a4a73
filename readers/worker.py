"""What every statectl task does first in Spark's Python worker process.

Spark keeps a Python worker for many tasks and runs a full garbage collection after each one
(``pyspark.daemon`` with worker reuse). That collection walks every object the process holds,
and a worker that has run statectl's tasks holds the modules they import (pyarrow, numpy, numba,
statectl's own): some 180,000 objects, 30-80 ms of CPU a task, more than a small task's own
work. What is alive when a task starts has outlived the collection after the task before, so
it is moved out of that walk (:func:`gc.freeze`); it is still freed when nothing refers to it
any more, and what the task itself makes is collected as before.
"""

from __future__ import annotations

import gc

from statectl.statefmt.jit import walk_compiled


def task_started() -> None:
    """Call first in a Spark task's Python function (never in the driver). A task's process
    walks compiled from the start (:func:`statectl.statefmt.jit.walk_compiled`): Spark runs
    many tasks in it."""
    gc.freeze()
    walk_compiled()
