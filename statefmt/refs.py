"""File references: checking that they stay inside their savepoint, and resolving them."""

from __future__ import annotations

from .errors import UnsafeReferenceError

MAX_PATH_LENGTH = 1024


def check_relative_path(path: str, where: str = "file reference") -> str:
    """Accept only a plain relative POSIX path that cannot leave its directory.

    Refused: empty or over-long paths, absolute paths, backslashes, NUL, a
    colon (schemes, drive letters), and empty, ``.`` or ``..`` components.
    """
    if not isinstance(path, str) or not path:
        raise UnsafeReferenceError(f"{where}: empty path")
    if len(path) > MAX_PATH_LENGTH:
        raise UnsafeReferenceError(f"{where}: path longer than {MAX_PATH_LENGTH} characters")
    if path.startswith("/") or "\\" in path or "\x00" in path or ":" in path:
        raise UnsafeReferenceError(f"{where}: {path!r} is not a plain relative path")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise UnsafeReferenceError(
                f"{where}: {path!r} may not contain empty, '.' or '..' components"
            )
    return path


def join(base: str, relative: str) -> str:
    """``base/relative`` for a directory path or URI and a checked relative path."""
    return base.rstrip("/") + "/" + check_relative_path(relative)
