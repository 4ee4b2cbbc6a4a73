"""Integrity while reading: every file's size, sha256 and Parquet footer, checked in executors.

Before a DataFrame is handed out, one Spark job checks its files in parallel,
one task per file (up to a cap), streaming each file through sha256 in 4 MiB
chunks; the footer check is the one `statectl validate` does (columns and
types, row count, key-group bounds). Only failures come back to the driver,
as (error class, message), and are raised there as the matching
:class:`StatectlError`. Spark's Parquet reader then reads the checked files.
"""

from __future__ import annotations

from statefmt import errors
from statefmt.canonical import check_parquet
from statefmt.errors import StatectlError
from statefmt.integrity import verify_file

from .files import Split

MAX_TASKS = 1024


def check_split(split: Split) -> tuple[str, str, str] | None:
    """Runs in an executor: None if the file is the one `_metadata` names, else why not."""
    loc = split.location
    try:
        verify_file(loc, split.file)
        with loc.open_input_file() as source:
            check_parquet(loc, source, split.schema, split.file)
    except StatectlError as e:
        return loc.uri, type(e).__name__, str(e)
    except OSError as e:
        return loc.uri, "StatectlError", f"cannot read {loc}: {e}"
    return None


def verify_splits(spark, parts: list[Split]) -> None:
    """Check every split in a Spark job; raise the first failure (by path) if any."""
    if not parts:
        return
    rdd = spark.sparkContext.parallelize(parts, min(len(parts), MAX_TASKS))
    failures = sorted(rdd.map(check_split).filter(lambda r: r is not None).collect())
    if not failures:
        return
    _, kind, message = failures[0]
    if len(failures) > 1:
        message += f" (and {len(failures) - 1} more damaged file(s))"
    cls = getattr(errors, kind, StatectlError)
    raise (cls if isinstance(cls, type) and issubclass(cls, StatectlError) else StatectlError)(message)
