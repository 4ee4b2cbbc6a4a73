"""File references and lineage locations: the one check that savepoint content stays inside.

Everything a savepoint's own files name is untrusted: a data file's ``path``, a
lineage entry's ``location`` (where a shallow copy's base lies), and any file
handle a foreign format (Flink) records. Every such reference is turned into a
:class:`~statectl.statefmt.fs.Location` here and nowhere else:

* :func:`check_relative_path` -- a data-file path is a plain relative POSIX path;
* :func:`check_lineage_location` -- a lineage location is an absolute savepoint
  location of the same filesystem family as the savepoint naming it, carrying
  no filesystem options (query, credentials, fragment) of its own; it is opened
  with the options of the location the user gave;
* :func:`statectl.statefmt.resolve.resolve_reference` -- a path (relative, or an
  absolute handle) resolved against a savepoint location, refused unless it lies
  inside one of the allowed roots, symlinks included on local disks.

These are string checks (no filesystem access), so `fs` can use them; turning
a checked reference into a `Location` is :mod:`statectl.statefmt.resolve`'s.

Every refusal is one :class:`UnsafeReferenceError` line naming the operator (or
field) and the reference.
"""

from __future__ import annotations

from urllib.parse import urlsplit

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


def split_options(uri: str) -> tuple[str, str]:
    """``(uri without its query, "?query" or "")``: filesystem options ride in the query."""
    if "://" not in uri or "?" not in uri:
        return uri, ""
    head, _, query = uri.partition("?")
    return head, "?" + query


def join(base: str, relative: str) -> str:
    """``base/relative`` for a directory path or URI and a checked relative path.

    The query of *base* (the filesystem options the user gave) stays at the end.
    """
    head, query = split_options(base)
    return head.rstrip("/") + "/" + check_relative_path(relative) + query


def family(uri: str) -> str:
    """The filesystem family of a location: ``local``, or the URI scheme (``s3``, ``hdfs``...)."""
    if "://" not in uri:
        return "local"
    scheme = uri.split("://", 1)[0].lower()
    return "local" if scheme == "file" else scheme


def check_lineage_location(location: str, savepoint_location: str, where: str) -> str:
    """The location a lineage entry may name, opened with the user's options; else refused.

    *location* comes from a file; *savepoint_location* is where the user told
    statectl to read. The result is *location* carrying the query (filesystem
    options) of *savepoint_location*, never one of its own.
    """
    def refuse(why: str):
        raise UnsafeReferenceError(f"{where}: lineage location {location!r} {why}")

    if not isinstance(location, str) or not location or len(location) > 4 * MAX_PATH_LENGTH:
        refuse("is empty or too long")
    if "\x00" in location or "\\" in location:
        refuse("contains NUL or a backslash")
    own = family(savepoint_location)
    if family(location) != own:
        refuse(f"is not on the savepoint's own filesystem ({own})")
    if "://" in location:
        parts = urlsplit(location)
        if parts.query or parts.fragment or "?" in location or "#" in location:
            refuse("carries filesystem options; only the user's own options apply")
        if "@" in parts.netloc:
            refuse("carries credentials")
        path = parts.path
        if own != "local" and parts.netloc == "":
            refuse("names no bucket or host")
    else:
        path = location
    if not path.startswith("/"):
        refuse("is not absolute")
    if any(part in (".", "..") for part in path.split("/")) or "//" in path.rstrip("/"):
        refuse("may not contain '.', '..' or empty components")
    _, query = split_options(savepoint_location)
    return location.rstrip("/") + query if location != "/" else location + query


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
