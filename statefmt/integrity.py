"""Checksums of data files, and the check that a file is the one `_metadata` names."""

from __future__ import annotations

import hashlib

from .errors import IntegrityError, MissingFileError
from .fs import Location
from .model import DataFile

ALGORITHM = "sha256"


def checksum_bytes(data: bytes) -> str:
    return f"{ALGORITHM}:{hashlib.sha256(data).hexdigest()}"


def checksum_file(location: Location) -> str:
    """The checksum of a file, read in chunks (memory stays flat for any size)."""
    digest = hashlib.sha256()
    for chunk in location.iter_chunks():
        digest.update(chunk)
    return f"{ALGORITHM}:{digest.hexdigest()}"


def check_size(location: Location, expected: DataFile) -> None:
    size = location.size()
    if size != expected.size:
        raise IntegrityError(
            f"{location}: size is {size} bytes, _metadata records {expected.size} "
            "(truncated or replaced file)"
        )


def verify_file(location: Location, expected: DataFile) -> None:
    """Raise MissingFileError or IntegrityError unless size and checksum match.

    A file without a checksum (a Flink savepoint's) is checked for its size only.
    """
    check_size(location, expected)
    if expected.checksum is None:
        return
    actual = checksum_file(location)
    if actual != expected.checksum:
        raise IntegrityError(f"{location}: checksum mismatch (file altered or corrupt)")


def read_verified(location: Location, expected: DataFile) -> bytes:
    """The file's bytes, after checking them against *expected* (one read)."""
    data = location.read_bytes()
    if len(data) != expected.size:
        raise IntegrityError(
            f"{location}: size is {len(data)} bytes, _metadata records {expected.size} "
            "(truncated or replaced file)"
        )
    if checksum_bytes(data) != expected.checksum:
        raise IntegrityError(f"{location}: checksum mismatch (file altered or corrupt)")
    return data


__all__ = ["checksum_bytes", "checksum_file", "verify_file", "read_verified", "check_size",
           "IntegrityError", "MissingFileError"]
