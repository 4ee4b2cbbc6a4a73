"""The errors statectl raises on bad input.

Every error carries a message a user can act on. The CLI catches
:class:`StatectlError` in one place, prints the message and exits non-zero;
anything else is a bug and shows a traceback.
"""

from __future__ import annotations

import re


class StatectlError(Exception):
    """Base of every error caused by input rather than by a bug."""

    exit_code = 1


class Interrupted(StatectlError):
    """The user stopped a command (Ctrl-C) after it had begun its work."""

    exit_code = 130


class UsageError(StatectlError):
    """An argument or option value is not acceptable."""


class DuplicateKeyError(UsageError):
    """Two rows give a value state (or a map key, or an entry) two values and no rule says how."""


class NotASavepointError(StatectlError):
    """The location holds no `_metadata` file."""


class MetadataError(StatectlError):
    """`_metadata` is malformed: not JSON, missing fields, wrong values."""


class UnsupportedVersionError(MetadataError):
    """`_metadata` was written by a format version this reader does not know."""


class UnsafeReferenceError(StatectlError):
    """A file reference escapes its savepoint (absolute, `..`, a scheme...)."""


class MissingFileError(StatectlError):
    """A file named by `_metadata` is not there."""


class IntegrityError(StatectlError):
    """A file's size or checksum differs from what `_metadata` records."""


class DataFileError(StatectlError):
    """A data file is readable bytes but not the file `_metadata` describes."""


class LimitError(StatectlError):
    """A parallelism or max parallelism is outside the allowed range."""


class UnknownOperatorError(StatectlError):
    """No operator with the requested uid or operator id."""


class UnknownStateError(StatectlError):
    """The operator has no state of the requested name."""


class UnreadableStateError(StatectlError):
    """The state exists, but its stream header names a serializer statectl cannot parse."""


class KeyTypeError(StatectlError):
    """A key column has a type that cannot be hashed into a key group."""


class SavepointExistsError(StatectlError):
    """The output location already holds a savepoint."""


class FlinkFormatError(StatectlError):
    """An Apache Flink savepoint file is malformed: truncated, corrupt, inconsistent."""


class UnsupportedFlinkFeature(StatectlError):
    """An Apache Flink savepoint uses something this reader does not decode."""


class SstFormatError(DataFileError):
    """An SST file is not a well-formed RocksDB block-based table (a bad checksum, a block
    past the end, an entry past its block)."""


class UnsupportedSstFeature(StatectlError):
    """An SST file uses a table feature the direct reader does not decode (the caller reads
    that database through RocksDB instead)."""


def first_line(error: BaseException) -> str:
    """The first line of *error*'s text, without the SQLSTATE and plan Spark appends
    (or the exception's class name when it has no text)."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    return re.split(r"\s*SQLSTATE: ", text.splitlines()[0])[0]


class FlinkEncodeError(StatectlError):
    """A value, or a type binding, that the Flink serializer it is bound to cannot write."""
