"""Where a command may write: the output checks every writing command makes before any work,
whatever format it writes (a savepoint, a file, a folder of Parquet). Knows no format: a
savepoint is a folder with a `_metadata`, an unfinished write's folder holds its marker."""

from __future__ import annotations

from .errors import SavepointExistsError, UsageError
from .fs import Location
from .locations import METADATA_FILE

WRITE_MARKER_PREFIX = "_writing-"  # an unfinished write's marker (writers/job.py)


def _comparable(loc: Location) -> str:
    """A location's text for containment tests: the real path on a local disk."""
    import os

    from .refs import split_options

    if loc.is_local:
        path = loc.uri[len("file://"):] if loc.uri.startswith("file://") else loc.uri
        return os.path.realpath(split_options(path)[0])
    return split_options(loc.uri)[0].rstrip("/")


def _overlaps(a: str, b: str) -> str | None:
    if a == b:
        return "is"
    if a.startswith(b.rstrip("/") + "/"):
        return "is inside"
    if b.startswith(a.rstrip("/") + "/"):
        return "contains"
    return None


def savepoint_roots(savepoints) -> list[str]:
    """Every directory the savepoints read by a command occupy: theirs and their lineage's."""
    roots = []
    for sp in savepoints:
        if sp is None or sp.location is None:
            continue
        roots.append(sp.location)
        roots.extend(e.location for e in sp.lineage)
    return roots


def check_output(location: str | Location, involved=(), *, overwrite: bool = False,
                 kind: str = "savepoint") -> Location:
    """The output location of a command, checked before any work starts.

    Refused: an output that is, contains or lies inside a savepoint of
    *involved* (those the command reads, and their lineage); one that is or
    lies below an existing file (for *kind* ``"file"``: that is a directory);
    an existing savepoint or non-empty directory, or an existing file, unless
    *overwrite* (a directory holding only an unfinished write's leftovers is
    not refused: the next write removes them).
    """
    loc = Location.of(location)
    mine = _comparable(loc)
    for root in savepoint_roots(involved):
        how = _overlaps(mine, _comparable(Location.of(root)))
        if how is not None:
            raise UsageError(f"output {loc} {how} the savepoint {root}, which this command reads; "
                             "choose an output outside it")
    if loc.is_local:
        _check_local_parents(loc)
    info = loc.info()
    if info.type == pafs_file_type().NotFound:
        return loc
    if kind == "file":
        if info.type == pafs_file_type().Directory:
            raise UsageError(f"output {loc} is a directory; give a file name")
        if not overwrite:
            raise UsageError(f"output {loc} already exists; choose a new output or pass --overwrite")
        return loc
    if info.type != pafs_file_type().Directory:
        raise UsageError(f"output {loc} is a file; give a directory")
    if overwrite:
        return loc
    if loc.child(METADATA_FILE).exists():
        raise SavepointExistsError(f"{loc} already holds a savepoint; choose a new output "
                                   "or pass --overwrite")
    entries = loc.list_files()
    if entries and not any(p.startswith(WRITE_MARKER_PREFIX) for p in entries):
        raise UsageError(f"output {loc} is a directory that is not empty; choose a new output "
                         "or pass --overwrite")
    return loc


def pafs_file_type():
    import pyarrow.fs as pafs

    return pafs.FileType


def _check_local_parents(loc: Location) -> None:
    """Refuse a local output lying below an existing file."""
    import os

    path = os.path.dirname(_comparable(loc))
    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    if path and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"output {loc} lies below {path}, which is a file")
