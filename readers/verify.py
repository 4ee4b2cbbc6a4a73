"""Integrity while reading: every file's size, sha256 and Parquet footer, checked before Spark reads it.

Each file is streamed through sha256 in 4 MiB chunks and its footer checked
as `statectl validate` does (columns and types, row count, key-group bounds).
Where the checks run:

* on a cluster, in the executors: one Spark job, one task per file (up to a
  cap); only failures come back to the driver, as (path, error class, message);
* in local mode, where the executors are the driver's own process and cores,
  in a thread pool of the driver, as wide as Spark's default parallelism. It
  uses the same cores and is several times cheaper than a job (no task or
  Python-worker round trips): measured 0.16 s against 0.67 s for 110 MiB.

Over Spark Connect (no RDDs) the checks run in the client's thread pool.
Failures are raised on the driver as the matching :class:`StatectlError`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from statectl.statefmt import errors
from statectl.statefmt.canonical import check_parquet
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.integrity import verify_file

from .files import Split
from .worker import task_started

MAX_TASKS = 1024


def check_split(split: Split) -> tuple[str, str, str] | None:
    """None if the file is the one `_metadata` names, else (path, error class, message)."""
    loc = split.location
    try:
        verify_file(loc, split.file)
        if split.schema is not None:  # None: not a Parquet file (native format)
            with loc.open_input_file() as source:
                check_parquet(loc, source, split.schema, split.file)
    except StatectlError as e:
        return loc.uri, type(e).__name__, str(e)
    except OSError as e:
        return loc.uri, "StatectlError", f"cannot read {loc}: {e}"
    return None


def verify_splits(spark, parts: list[Split], in_executors: bool | None = None) -> None:
    """Check every split; raise the first failure (by path) if any.

    *in_executors* None chooses as the module says: executors unless Spark runs locally.
    """
    if not parts:
        return
    from .files import is_connect

    if is_connect(spark):  # no RDDs over Spark Connect: checked here, by this process's threads
        in_executors, width = False, os.cpu_count() or 1
    else:
        sc = spark.sparkContext
        width = sc.defaultParallelism
        if in_executors is None:
            in_executors = not sc.master.startswith("local")
    if in_executors:
        rdd = sc.parallelize(parts, min(len(parts), MAX_TASKS))
        failures = rdd.map(_check_in_task).filter(lambda r: r is not None).collect()
    else:
        with ThreadPoolExecutor(max(1, min(len(parts), width))) as pool:
            failures = [r for r in pool.map(check_split, parts) if r is not None]
    if failures:
        _raise(sorted(failures))


def _check_in_task(split: Split) -> tuple[str, str, str] | None:
    task_started()
    return check_split(split)


def _raise(failures: list[tuple[str, str, str]]) -> None:
    _, kind, message = failures[0]
    if len(failures) > 1:
        message += f" (and {len(failures) - 1} more damaged file(s))"
    cls = getattr(errors, kind, StatectlError)
    if not (isinstance(cls, type) and issubclass(cls, StatectlError)):
        cls = StatectlError
    raise cls(message)
