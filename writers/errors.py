"""Errors of writing, and how they cross from Spark tasks to the driver.

A task (or a SQL ``raise_error``) cannot raise a Python exception on the
driver; it fails with text. :func:`task_error_text` puts a marked message in
that text and :func:`from_spark_error` turns a failed job back into the one
clear :class:`StatectlError` it stands for.
"""

from __future__ import annotations

import contextlib
import re

from statectl.statefmt import errors as fmt_errors
from statectl.statefmt.errors import DuplicateKeyError, StatectlError, UsageError
from statectl.readers.owner import watching
from statectl.readers.worker import task_started


class SpecError(UsageError):
    """A bootstrap spec is malformed or names something that does not exist.

    A spec's mistakes are found in one pass and raised together: :attr:`lines`
    holds one line per mistake (the CLI prints each as an ``error:`` line).
    """

    def __init__(self, *lines: str):
        super().__init__("\n".join(lines))
        self.lines = lines


class InputError(UsageError):
    """An input DataFrame lacks a column, or a column has the wrong type."""


class NullKeyError(UsageError):
    """A key column (or a map key) holds a null."""


class StateValueError(UsageError):
    """A per-key function set a value that does not fit its state's type."""


class WriteFailedError(StatectlError):
    """The Spark job that writes the files failed for a reason other than the input."""


_MARK = "STATECTL_ERROR"
_PATTERN = re.compile(_MARK + r"\[(\w+)\]: ([^\n]*?)(?: SQLSTATE: \w+)?(?:'?\s*$|\n)", re.M)
_CLASSES = {
    cls.__name__: cls
    for cls in (SpecError, InputError, DuplicateKeyError, NullKeyError, StateValueError,
                WriteFailedError)
}
_CLASSES.update({
    name: obj for name, obj in vars(fmt_errors).items()
    if isinstance(obj, type) and issubclass(obj, StatectlError)
})


def task_error_text(error: StatectlError) -> str:
    """The marked one-line text a task fails with, for *error*."""
    message = " ".join(str(error).split())
    return f"{_MARK}[{type(error).__name__}]: {message}"


@contextlib.contextmanager
def task_errors():
    """The context of every writer task: a StatectlError leaves the task as its marked
    one-line text (and the worker's garbage collection skips what was alive before it,
    :mod:`statectl.readers.worker`); the task ends with its write's process (:mod:`statectl.readers.owner`)."""
    task_started()
    try:
        with watching():
            yield
    except StatectlError as e:
        raise RuntimeError(task_error_text(e)) from None


def sql_error_prefix(cls: type[StatectlError]) -> str:
    """The prefix of a SQL ``raise_error`` message that stands for *cls*."""
    return f"{_MARK}[{cls.__name__}]: "


def from_spark_error(error: BaseException) -> StatectlError | None:
    """The StatectlError a failed job carries in its text, or None if it carries none."""
    matches = _PATTERN.findall(str(error))
    if not matches:
        return None
    name, message = matches[-1]
    return _CLASSES.get(name, StatectlError)(message.strip())
