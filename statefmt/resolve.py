"""A reference named by savepoint content, resolved to a `Location` only if it stays inside.

The string checks live in :mod:`statectl.statefmt.refs`; this module adds what
needs the filesystem: the allowed roots and, on a local disk, the real path
(so a symlink cannot lead out).
"""

from __future__ import annotations

import os
import posixpath
from typing import Iterable
from urllib.parse import urlsplit

from .errors import UnsafeReferenceError
from .fs import Location
from .refs import _inside, check_relative_path, family, split_options


def resolve_reference(savepoint_location: str | Location, reference: str,
                      allowed_roots: Iterable[str | Location] = (),
                      where: str = "file reference") -> Location:
    """Where *reference* (a file named by savepoint content) lies, if it stays inside.

    *reference* is a relative path (resolved against *savepoint_location*) or an
    absolute path/URI (a foreign format's file handle). It must lie inside
    *savepoint_location* or one of *allowed_roots* (e.g. the locations of the
    savepoints of the lineage). On a local disk the check is made on the real
    path, so a symlink cannot lead out. *where* names the operator in errors.
    """
    root = Location.of(savepoint_location)
    roots = [root, *(Location.of(r) for r in allowed_roots)]
    if not isinstance(reference, str) or not reference:
        raise UnsafeReferenceError(f"{where}: empty file reference")
    if reference.startswith("/") or "://" in reference:
        if family(reference) != family(root.uri):
            raise UnsafeReferenceError(
                f"{where}: file reference {reference!r} is not on the savepoint's filesystem")
        parts = urlsplit(reference) if "://" in reference else None
        if parts is not None and (parts.query or parts.fragment or "@" in parts.netloc):
            raise UnsafeReferenceError(
                f"{where}: file reference {reference!r} carries filesystem options")
        path = parts.path if parts is not None else reference
        if any(p in (".", "..") for p in path.split("/")) or "\x00" in reference:
            raise UnsafeReferenceError(
                f"{where}: file reference {reference!r} may not contain '.' or '..' components")
        candidate = Location(reference + split_options(root.uri)[1]) if parts is not None \
            and family(reference) != "local" else Location(_local_path(Location(reference)))
        inside = next((r for r in roots if _inside(_comparable(candidate), _comparable(r))), None)
        if inside is None:
            raise UnsafeReferenceError(
                f"{where}: file reference {reference!r} lies outside the savepoint")
    else:
        check_relative_path(reference, where)
        candidate, inside = root.child(reference), root
    if candidate.is_local:
        _check_real_path(candidate, inside, reference, where, follow_root=inside is root)
    return candidate


def _local_path(loc: Location) -> str:
    uri = split_options(loc.uri)[0]
    return uri[len("file://"):] if uri.startswith("file://") else uri


def _comparable(loc: Location) -> str:
    return _local_path(loc) if loc.is_local else split_options(loc.uri)[0]


def _check_real_path(candidate: Location, root: Location, reference: str, where: str,
                     follow_root: bool = True) -> None:
    """Refuse a local file whose real path (symlinks followed) leaves the real *root*.

    The savepoint's own folder is the user's choice and may be reached through a symlink;
    any other root (a checkpoint's ``shared/``, a lineage savepoint) may not be one itself.
    """
    path = _local_path(root).rstrip("/")
    real_root = os.path.realpath(path) if follow_root else \
        os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    real = os.path.realpath(_local_path(candidate))
    if not _inside(posixpath.normpath(real), real_root):
        raise UnsafeReferenceError(
            f"{where}: file reference {reference!r} leads out of the savepoint (a symlink)")
