"""What every statectl task does first in Spark's Python worker process.

Spark keeps a Python worker for many tasks and runs a full garbage collection after each one
(``pyspark.daemon`` with worker reuse). That collection walks every object the process holds,
and a worker that has run statectl's tasks holds the modules they import (pyarrow, numpy, numba,
statectl's own): some 180,000 objects, 30-80 ms of CPU a task, more than a small task's own
work. What is alive when a task starts has outlived the collection after the task before, so
it is moved out of that walk (:func:`gc.freeze`); it is still freed when nothing refers to it
any more, and what the task itself makes is collected as before.

A task decodes its splits piece by piece, each piece allocating and freeing some tens of MiB
of arrays. glibc's malloc hands large freed blocks back to the kernel (``munmap``, or a trim of
the heap's top) and the next piece faults the same amount in again, zeroed page by page: about
a fifth of a decode's time (a 500K-key split: 1,300 page faults, 0.068 s, against none and
0.056 s). The worker keeps up to :data:`KEPT_HEAP` of freed memory for the next piece instead
(:func:`keep_freed_memory`).
"""

from __future__ import annotations

import ctypes
import gc

from statectl.statefmt.jit import walk_compiled

KEPT_HEAP = 64 << 20  # freed memory a worker keeps for its next piece rather than give back
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_MMAP_THRESHOLD_MAX = 32 << 20  # the largest glibc accepts on 64-bit
_kept: bool | None = None  # not tried yet


def task_started() -> None:
    """Call first in a Spark task's Python function (never in the driver). A task's process
    walks compiled from the start (:func:`statectl.statefmt.jit.walk_compiled`): Spark runs
    many tasks in it."""
    gc.freeze()
    walk_compiled()
    keep_freed_memory()


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve blocks of up to 32 MiB from its heap and keep up to
    :data:`KEPT_HEAP` freed at the heap's top, once per process; False where the C library
    is not glibc (nothing changed)."""
    global _kept
    if _kept is None:
        try:
            mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
        except (OSError, AttributeError):
            mallopt = None
        _kept = mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) \
            and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_HEAP))
    return _kept
