"""The bytes of a Flink savepoint's streams, every file reached through the one reference check.

A stream handle of `_metadata` names its file relative to the savepoint's folder or by
absolute path; :func:`stream_location` resolves either against a :class:`FlinkFolder`,
which carries the folders of the savepoint's lineage its handles may reach (checked when
its lineage file was read), so a split decoded in a Spark task, where no lineage file
is read, resolves exactly as the savepoint opened on the driver. No state decoding here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.fs as pafs

from ..errors import FlinkFormatError, MissingFileError
from ..fs import Location
from ..resolve import resolve_reference
from .handles import IncrementalRocksDB, InlineStream, KeyGroupsStream, RelativeFile, SegmentFile, StreamHandle
from .lineage import checkpoint_roots

METADATA = "_metadata"


@dataclass(frozen=True, eq=False)
class FlinkFolder(Location):
    """The folder of a Flink savepoint (a :class:`Location`, equal to another by its uri), with
    the folders of its lineage its file handles may reach."""

    roots: tuple[str, ...] = ()


def lineage_roots_of(base: Location) -> tuple[str, ...]:
    """The lineage folders *base* lets file handles reach (none for a plain location)."""
    return base.roots if isinstance(base, FlinkFolder) else ()


def split_base(split) -> FlinkFolder:
    """The folder a :class:`FlinkSplit`'s handles resolve against, with the lineage roots it carries."""
    return FlinkFolder(Location.of(split.savepoint).uri, split.roots)


def stream_location(base: Location, handle: StreamHandle) -> Location | None:
    """Where a stream's bytes lie (None for inline streams)."""
    if isinstance(handle, InlineStream):
        return None
    if isinstance(handle, RelativeFile):
        return check_reference(base, handle.relative_path)
    path = handle.path
    if path.startswith("file:") and not path.startswith("file://"):
        path = "/" + path[len("file:"):].lstrip("/")
    return check_reference(base, path)




def check_reference(base: Location, reference: str) -> Location:
    """Every file a Flink `_metadata` names passes here, through the project's one
    reference check (:func:`statectl.statefmt.resolve.resolve_reference`).

    A file lies inside the savepoint; a retained checkpoint (``.../<job>/chk-N``)
    may also reach its job's ``shared/`` and ``taskowned/`` folders, where Flink
    keeps the files checkpoints share (absolute handles); a shallow copy statectl
    derived may reach the savepoints of its lineage (`lineage.py`), the roots its
    :class:`FlinkFolder` carries. Nothing else.
    """
    return resolve_reference(base, reference, [*checkpoint_roots(base), *lineage_roots_of(base)],
                             where=f"{base.child(METADATA)}: file handle")



def stream_name(base: Location, handle: StreamHandle) -> str:
    if isinstance(handle, InlineStream):
        return f"{base.child(METADATA)} (inline stream {handle.name.rsplit('/', 1)[-1]})"
    return str(stream_location(base, handle))


def read_stream(base: Location, handle: StreamHandle) -> bytes:
    """All bytes of a stream; a missing or short file is one error naming it."""
    return read_range(base, handle, 0, handle.size)


def read_range(base: Location, handle: StreamHandle, start: int, end: int) -> bytes:
    """Bytes [start, end) of a stream, after checking its file is there with its recorded size."""
    return OpenStream(base, handle).read(start, end)


class OpenStream:
    """A stream whose file is resolved and checked once (there, a file, of its recorded size),
    for reads of many of its ranges: a split's key groups are read piece by piece."""

    def __init__(self, base: Location, handle: StreamHandle):
        self.handle = handle
        self.loc = stream_location(base, handle)
        self.name = stream_name(base, handle) if self.loc is None else str(self.loc)
        self.offset = handle.start if isinstance(handle, SegmentFile) else 0
        if self.loc is not None:
            _check_file(self.loc, base, handle)

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the stream."""
        if self.loc is None:
            return self.handle.data[start:end]
        start, end = start + self.offset, end + self.offset
        with self.loc.open_input_file() as f:
            f.seek(start)
            data = f.read(end - start)
        if len(data) != end - start:
            raise FlinkFormatError(f"{self.loc}: ends early: bytes [{start}, {end}) expected")
        return data


def _check_file(loc: Location, base: Location, handle: StreamHandle) -> None:
    info = loc.info()
    if info.type == pafs.FileType.NotFound:
        raise MissingFileError(f"{loc}: file is missing (referenced by {base.child(METADATA)})")
    if info.type != pafs.FileType.File:
        raise FlinkFormatError(f"{loc}: {_not_a_file(info)}, referenced by {base.child(METADATA)} "
                               f"as a stream of {handle.size} bytes")
    if isinstance(handle, SegmentFile):
        if info.size < handle.start + handle.size:
            raise FlinkFormatError(f"{loc}: segment [{handle.start}, {handle.start + handle.size}) "
                                   f"runs past the end of the file ({info.size} bytes)")
    elif info.size != handle.size:
        raise FlinkFormatError(f"{loc}: {info.size} bytes, _metadata says {handle.size}")


def _not_a_file(info: pafs.FileInfo) -> str:
    return "a directory, not a file" if info.type == pafs.FileType.Directory else "not a regular file"


def header_length(handle: KeyGroupsStream) -> int:
    """Where a keyed stream's data starts: its first key group's offset (the header precedes it)."""
    present = [o for o in handle.offsets if o > 0]
    return min(present) if present else handle.stream.size



def native_files(base: Location, handle: IncrementalRocksDB, tmp: str) -> list[tuple[str, "Location | str"]]:
    """``(RocksDB local name, file)`` of every file of a native snapshot; inline and
    segment streams are written into *tmp* first. Missing files and wrong sizes are
    errors naming the file."""
    files = []
    for i, (local, stream) in enumerate(handle.files):
        if isinstance(stream, (InlineStream, SegmentFile)):
            path = os.path.join(tmp, f"{i}-{os.path.basename(local)}")
            with open(path, "wb") as f:
                f.write(read_stream(base, stream))
            files.append((local, path))
            continue
        loc = stream_location(base, stream)
        info = loc.info()
        if info.type == pafs.FileType.NotFound:
            raise MissingFileError(f"{loc}: file is missing (referenced by {base.child(METADATA)})")
        if info.type != pafs.FileType.File:
            raise FlinkFormatError(f"{loc}: {_not_a_file(info)}, referenced by {base.child(METADATA)}")
        size = info.size
        if size != stream.size:
            raise FlinkFormatError(f"{loc}: {size} bytes, _metadata says {stream.size}")
        files.append((local, loc))
    return files

