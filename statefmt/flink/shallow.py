"""Shallow pointer copies of Flink operators: their handles made to point at the base's files.

A Flink savepoint names its own files by *relative* handles (resolved against the folder of
its `_metadata`), so an operator copied into another savepoint keeps its files only if those
handles become *absolute* file handles naming the base's files where they lie; Flink restores
those. Inline streams stay inline; absolute handles (a retained checkpoint's ``shared/``
files, the files of a base's own lineage) and segments of merged files stay as they are.

:func:`self_contained` is the opposite: every file a handle names outside the new savepoint
is copied next to its `_metadata` and named by a relative handle.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..fs import Location
from ..locations import FileCopy
from ..model import LineageEntry
from ..refs import split_options
from .handles import (AbsoluteFile, IncrementalRocksDB, InlineStream, KeyGroupsStream, OperatorStream,
                      RelativeFile, SegmentFile, StreamHandle)
from .lineage import checkpoint_roots, lineage_roots
from .metadata import FlinkOperator, SubtaskState
from .streamio import stream_location

StreamMap = Callable[[StreamHandle], StreamHandle]


def map_streams(op: FlinkOperator, fn: StreamMap) -> FlinkOperator:
    """*op* with *fn* applied to every stream handle it holds (keyed, operator, raw, coordinator)."""
    def stream(s):
        return None if s is None else fn(s)

    def keyed(h):
        if isinstance(h, KeyGroupsStream):
            return dataclasses.replace(h, stream=stream(h.stream))
        if isinstance(h, IncrementalRocksDB):
            return dataclasses.replace(h, meta=stream(h.meta),
                                       shared=tuple((n, stream(s)) for n, s in h.shared),
                                       private=tuple((n, stream(s)) for n, s in h.private))
        return h

    def operator(h: OperatorStream) -> OperatorStream:
        return dataclasses.replace(h, stream=stream(h.stream))

    def subtask(s: SubtaskState) -> SubtaskState:
        return dataclasses.replace(
            s, managed_operator=tuple(map(operator, s.managed_operator)),
            raw_operator=tuple(map(operator, s.raw_operator)),
            managed_keyed=keyed(s.managed_keyed), raw_keyed=keyed(s.raw_keyed))

    return dataclasses.replace(op, subtasks=tuple(map(subtask, op.subtasks)), coordinator=stream(op.coordinator))


def streams(op: FlinkOperator) -> list[StreamHandle]:
    """Every stream handle of *op*."""
    found: list[StreamHandle] = []
    map_streams(op, lambda s: found.append(s) or s)
    return found


def flink_path(loc: Location) -> str:
    """How Flink names a file by absolute path: ``file:/...`` for a local file, else its URI
    (without the user's filesystem options)."""
    uri = split_options(loc.uri)[0]
    if loc.is_local:
        return "file:" + (uri[len("file://"):] if uri.startswith("file://") else uri)
    return uri


def pointer_copy(base: Location, op: FlinkOperator) -> FlinkOperator:
    """*op* of the savepoint at *base* with every relative handle made absolute (see module doc)."""
    def absolute(s: StreamHandle) -> StreamHandle:
        if isinstance(s, RelativeFile):
            return AbsoluteFile(flink_path(stream_location(base, s)), s.size)
        return s
    return map_streams(op, absolute)


def lineage_needed(base: Location, base_id: str, base_lineage: tuple[LineageEntry, ...],
                   ops: list[FlinkOperator]) -> tuple[LineageEntry, ...]:
    """The lineage entries the files of *ops* (read from *base*) lie in: *base* itself (its
    folder or, for a retained checkpoint, its job's ``shared/``), or an entry of *base*'s
    lineage, so lineage never chains."""
    own = [(LineageEntry(base_id, base.uri), r) for r in (base, *checkpoint_roots(base))]
    roots = [(e, r.uri.rstrip("/") + "/") for e, r in own + lineage_roots(base_lineage)]
    needed: dict[str, LineageEntry] = {}
    for op in ops:
        for s in streams(op):
            if isinstance(s, InlineStream):
                continue
            uri = stream_location(base, s).uri
            entry = next((e for e, r in roots if uri.startswith(r)), None)
            if entry is not None:
                needed.setdefault(entry.savepoint_id, entry)
    return tuple(needed.values())


def self_contained(base: Location, ops: list[FlinkOperator], name_for: Callable[[str, set[str]], str]
                   ) -> tuple[list[FlinkOperator], list[FileCopy]]:
    """*ops* (read from *base*) with every file handle relative, and the copies that needs.

    *name_for(file name, names taken)* picks each copy's name; a file several handles name
    is copied once.
    """
    copies: dict[str, FileCopy] = {}
    taken: set[str] = set()

    def relative(s: StreamHandle) -> StreamHandle:
        if isinstance(s, InlineStream):
            return s
        source = stream_location(base, s)
        start = s.start if isinstance(s, SegmentFile) else 0
        key = f"{source.uri}#{start}:{s.size}"
        if key not in copies:
            name = name_for(source.name, taken)
            taken.add(name)
            copies[key] = FileCopy(source, start, s.size, not isinstance(s, SegmentFile), name)
        return RelativeFile(copies[key].name, s.size)

    return [map_streams(op, relative) for op in ops], list(copies.values())
