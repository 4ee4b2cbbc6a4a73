"""The lineage of a Flink savepoint that statectl derived from another: a file beside `_metadata`.

A Flink `_metadata` has no place for lineage, and Flink ignores files it does not
reference, so a shallow copy records the savepoints whose files it references in
``_statectl_lineage-<savepoint id>.json`` next to its `_metadata`, with the
vocabulary of statectl's own format (`docs/FORMAT.md` §3.5, §7): lineage entries
of ``savepoint_id`` and ``location``.

A Flink savepoint's id is derived from its `_metadata` (:func:`flink_savepoint_id`),
so the file's name ties it to one `_metadata`: a write can put the new lineage
file in place before renaming the new `_metadata` in, and a `_metadata` never
sees a lineage file that is not its own. Lineage locations are untrusted content:
each passes :func:`refs.check_lineage_location` and, where it exists, must hold
the savepoint its entry names.
"""

from __future__ import annotations

import hashlib
import json
import re

from ..errors import MetadataError, MissingFileError, StatectlError, UnsafeReferenceError
from ..fs import Location
from ..model import LineageEntry
from ..refs import check_lineage_location, split_options
from .metadata import is_flink_metadata

FORMAT_NAME = "statectl-flink-lineage"
FORMAT_VERSION = 1
METADATA = "_metadata"
MAX_BYTES = 1 << 20


def flink_savepoint_id(metadata: bytes) -> str:
    """The id statectl gives a Flink savepoint: derived from its `_metadata` bytes."""
    return "flink-" + hashlib.sha256(metadata).hexdigest()[:32]


def lineage_file_name(savepoint_id: str) -> str:
    return f"_statectl_lineage-{savepoint_id}.json"


def encode_lineage(savepoint_id: str, lineage: tuple[LineageEntry, ...]) -> bytes:
    doc = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "savepoint_id": savepoint_id,
           "lineage": [{"savepoint_id": e.savepoint_id, "location": split_options(e.location)[0]}
                       for e in lineage]}  # the user's filesystem options are not the file's
    return (json.dumps(doc, indent=1) + "\n").encode()


def commit_metadata(out: Location, data: bytes, lineage: tuple[LineageEntry, ...]) -> str | None:
    """Commit a Flink savepoint at *out*: its lineage file (when it has lineage), then its
    `_metadata` *data*, atomically; the lineage file's name, or None.

    The lineage file's name comes from *data*, so the savepoint already at *out* (if any) never
    sees it; a lineage file this call created is removed again when `_metadata` cannot be
    written (one that was there, of an identical `_metadata`, stays).
    """
    if not lineage:
        out.child(METADATA).write_bytes_atomically(data)
        return None
    new_id = flink_savepoint_id(data)
    name = lineage_file_name(new_id)
    target = out.child(name)
    created = not target.exists()
    try:
        target.write_bytes_atomically(encode_lineage(new_id, lineage))
        out.child(METADATA).write_bytes_atomically(data)
    except BaseException:
        if created:
            target.delete_file()
        raise
    return name


def read_lineage(location: Location, savepoint_id: str) -> tuple[LineageEntry, ...]:
    """The checked lineage of the Flink savepoint *savepoint_id* at *location* (none: ``()``)."""
    path = location.child(lineage_file_name(savepoint_id))
    if not path.exists():
        return ()
    if path.size() > MAX_BYTES:
        raise MetadataError(f"{path}: lineage file larger than {MAX_BYTES} bytes")
    try:
        doc = json.loads(path.read_bytes())
    except ValueError as e:
        raise MetadataError(f"{path}: not a lineage file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise MetadataError(f"{path}: not a statectl lineage file")
    if doc.get("format_version") != FORMAT_VERSION:
        raise MetadataError(f"{path}: lineage file version {doc.get('format_version')!r} is not "
                            f"supported (supported: {FORMAT_VERSION})")
    raw = doc.get("lineage")
    if doc.get("savepoint_id") != savepoint_id or not isinstance(raw, list):
        raise MetadataError(f"{path}: lineage file of another savepoint")
    entries = []
    for i, e in enumerate(raw):
        if not (isinstance(e, dict) and isinstance(e.get("savepoint_id"), str)
                and isinstance(e.get("location"), str)):
            raise MetadataError(f"{path}: lineage[{i}] needs a savepoint_id and a location")
        where = f"{path}: lineage[{i}]"
        checked = check_lineage_location(e["location"], location.uri, where)
        _check_holds(Location(checked), e["savepoint_id"], e["location"], where)
        entries.append(LineageEntry(e["savepoint_id"], checked))
    if len({e.savepoint_id for e in entries}) != len(entries) or savepoint_id in {e.savepoint_id for e in entries}:
        raise MetadataError(f"{path}: lineage names a savepoint twice, or the savepoint itself")
    return tuple(entries)


def _check_holds(base: Location, savepoint_id: str, written: str, where: str) -> None:
    """A lineage location that exists must hold the savepoint its entry names: a Flink one (a
    shallow copy's files are Flink streams of Flink bases; statectl's own format checks its own
    lineage, `statefmt/savepoint.check_lineage`)."""
    meta = base.child(METADATA)
    if not base.exists():
        return  # gone: reported as a missing dependency by whoever needs it
    try:
        data = meta.read_bytes() if meta.exists() else b""
    except StatectlError:
        data = b""
    found = flink_savepoint_id(data) if is_flink_metadata(data[:4]) else None
    if found != savepoint_id:
        raise UnsafeReferenceError(f"{where}: lineage location {written!r} does not hold savepoint {savepoint_id}")


def check_present(location: Location, lineage: tuple[LineageEntry, ...]) -> None:
    """One error line naming the first savepoint of the lineage whose directory is gone."""
    for e in lineage:
        if not Location(e.location).exists():
            raise MissingFileError(f"{location}: savepoint {e.savepoint_id} at {e.location}, which this "
                                   "one references, is gone")


_CHECKPOINT = re.compile(r"chk-\d+")


def checkpoint_roots(location: Location) -> list[Location]:
    """A retained checkpoint (``.../<job>/chk-N``) may also reach its job's ``shared/`` and
    ``taskowned/`` folders, where Flink keeps the files checkpoints share."""
    if not _CHECKPOINT.fullmatch(location.name.rstrip("/")):
        return []
    job = Location(location.uri.rstrip("/").rsplit("/", 1)[0])
    return [job.child("shared"), job.child("taskowned")]


def lineage_roots(lineage: tuple[LineageEntry, ...]) -> list[tuple[LineageEntry, Location]]:
    """Every folder whose files a savepoint with this lineage may reference, with its entry."""
    out = []
    for e in lineage:
        loc = Location(e.location)
        out += [(e, r) for r in (loc, *checkpoint_roots(loc))]
    return out
