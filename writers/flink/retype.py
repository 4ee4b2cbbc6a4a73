"""A keyed state's serializer snapshot replaced by a new job's, its values kept byte for byte.

For the conversions whose values do not change (`statefmt.flink.compat`: a SQL column made
nullable, a longer VARCHAR: the binary rows are the same), only the header of each subtask's
keyed stream changes: the key's and those states' serializer snapshots become NEW's. A canonical
or heap stream is written again as the new header and the old stream's key groups (their
offsets moved by the header's change of length); a RocksDB native snapshot gets a new meta
stream and keeps its SST files where they lie. Files carry the write's token. A state whose values change too (`convert.py`) has each entry's
value rewritten in the same pass, its key groups' offsets moved by what the values grew.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from statectl.statefmt.errors import FlinkFormatError, UsageError
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.handles import IncrementalRocksDB, KeyGroupsStream, RelativeFile
from statectl.statefmt.flink.headers import KeyedHeader, StateMeta, read_keyed_header
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.flink.serializers import read_top_snapshot
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.fs import Location

from .convert import converted_body, convertible_handle


@dataclasses.dataclass(frozen=True)
class Segments:
    """Where a keyed stream header's parts lie: the key's snapshot, each state's meta, the end."""
    key: tuple[int, int]
    states: dict[str, tuple[int, int]]
    end: int


def header_segments(data: bytes, source: str) -> Segments:
    """The parts of the keyed header at the start of *data* (as `headers.read_keyed_header` reads it)."""
    r = Reader(data, source)
    r.int()
    r.bool()
    key_start = r.pos
    read_top_snapshot(r)
    key = (key_start, r.pos)
    states = {}
    for _ in range(r.short()):
        start = r.pos
        name = r.utf()
        r.int()
        for _ in range(r.int()):
            r.utf(), r.utf()
        for _ in range(r.int()):
            r.utf()
            read_top_snapshot(r)
        states[name] = (start, r.pos)
    return Segments(key, states, r.pos)


def spliced_header(old: bytes, old_parts: Segments, new: bytes, new_parts: Segments, states: set[str],
                   key: bool) -> bytes:
    """*old*'s header with the key's snapshot (if *key*) and *states*' metas taken from *new*."""
    pieces = [(old_parts.key, new_parts.key if key else None)]
    pieces += [(span, new_parts.states[name] if name in states else None) for name, span in old_parts.states.items()]
    out, at = bytearray(), 0
    for (start, end), replacement in pieces:
        out += old[at:start]
        out += new[replacement[0]:replacement[1]] if replacement else old[start:end]
        at = end
    return bytes(out + old[at:old_parts.end])


def retype_streams(base: Location, op: FlinkOperator, new_header: KeyedHeader, states: set[str], key: bool,
                   out: Location, token: str, values: dict[str, StateMeta] | None = None,
                   initial: dict[str, dict] | None = None, now_ms: int = 0) -> dict[int, tuple[RelativeFile, tuple]]:
    """Each subtask's keyed header of *op* retyped as NEW's *new_header* says, written into *out*;
    the states in *values* (NEW's metas by name) get their values rewritten too (`convert.py`,
    *initial*: {state: {field path: value}} for fields NEW adds). Returns {subtask: (the new
    stream, its key groups' offsets)} for :func:`with_streams`."""
    new_parts = header_segments(new_header.raw, "NEW's keyed header")
    missing = (states | set(values or {})) - set(new_parts.states)
    if missing:
        raise UsageError(f"NEW's keyed header lacks the states {sorted(missing)}")
    moves = {}
    for sub in op.subtasks:
        handle = sub.managed_keyed
        if handle is None:
            continue
        stream = handle.meta if isinstance(handle, IncrementalRocksDB) else handle.stream
        data = read_stream(base, stream)
        source = f"operator {op.operator_id} subtask {sub.index}"
        parts = header_segments(data, source)
        header = spliced_header(data, parts, new_header.raw, new_parts, states | set(values or {}), key)
        offsets = None
        if values:
            convertible_handle(handle, f"operator {op.operator_id}")
            body, at = converted_body(data, read_keyed_header(data, source), parts.end, handle, op.max_parallelism,
                                      values, initial or {}, now_ms, source)
        else:
            body, at = data[parts.end:], None
        if isinstance(handle, KeyGroupsStream):
            if at is None:
                at = np.asarray([o - parts.end if o > 0 else 0 for o in handle.offsets], dtype=np.int64)
            offsets = tuple(int(o) + len(header) if h > 0 else 0 for o, h in zip(at, handle.offsets))
        name = f"retyped-{op.operator_id}-{sub.index}-{token}"
        out.child(name).write_bytes_atomically(header + body)
        moves[sub.index] = (RelativeFile(name, len(header) + len(body)), offsets)
    return moves


def with_streams(op: FlinkOperator, moves: dict[int, tuple[RelativeFile, tuple | None]]) -> FlinkOperator:
    """*op* (a pointer copy, or a self-contained copy) reading its keyed streams from *moves*."""
    return dataclasses.replace(op, subtasks=tuple(
        dataclasses.replace(sub, managed_keyed=_moved(sub.managed_keyed, *moves[sub.index]))
        if sub.index in moves else sub for sub in op.subtasks))


def _moved(handle, stream: RelativeFile, offsets: tuple | None):
    if isinstance(handle, IncrementalRocksDB):
        return dataclasses.replace(handle, meta=stream)
    if not isinstance(handle, KeyGroupsStream):
        raise FlinkFormatError(f"a keyed handle of an unknown kind: {type(handle).__name__}")
    return dataclasses.replace(handle, stream=stream, offsets=offsets)
