"""A keyed state's serializer snapshot replaced by a new job's, its values kept byte for byte.

For the conversions whose values do not change (`statefmt.flink.compat`: a SQL column made
nullable, a longer VARCHAR: the binary rows are the same), only the header of each subtask's
keyed stream changes: the key's and those states' serializer snapshots become NEW's. A canonical
or heap stream is written again as the new header and the old stream's key groups (their
offsets moved by the header's change of length); a RocksDB native snapshot gets a new meta
stream and keeps its SST files where they lie. Files carry the write's token.
"""

from __future__ import annotations

import dataclasses

from statectl.statefmt.errors import FlinkFormatError, UsageError
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.handles import IncrementalRocksDB, KeyGroupsStream, RelativeFile
from statectl.statefmt.flink.metadata import FlinkOperator
from statectl.statefmt.flink.serializers import read_top_snapshot
from statectl.statefmt.flink.streamio import read_stream
from statectl.statefmt.fs import Location


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


def retype_streams(base: Location, op: FlinkOperator, new_header: bytes, states: set[str], key: bool,
                   out: Location, token: str) -> dict[int, tuple[RelativeFile, int]]:
    """Each subtask's keyed header of *op* retyped as NEW's *new_header* says, written into *out*:
    {subtask: (the new stream, how far its key groups moved)} for :func:`with_streams`."""
    new_parts = header_segments(new_header, "NEW's keyed header")
    missing = states - set(new_parts.states)
    if missing:
        raise UsageError(f"NEW's keyed header lacks the states {sorted(missing)}")
    moves = {}
    for sub in op.subtasks:
        handle = sub.managed_keyed
        if handle is None:
            continue
        stream = handle.meta if isinstance(handle, IncrementalRocksDB) else handle.stream
        data = read_stream(base, stream)
        parts = header_segments(data, f"operator {op.operator_id} subtask {sub.index}")
        header = spliced_header(data, parts, new_header, new_parts, states, key)
        name = f"retyped-{op.operator_id}-{sub.index}-{token}"
        body = header + data[parts.end:]
        out.child(name).write_bytes_atomically(body)
        moves[sub.index] = (RelativeFile(name, len(body)), len(header) - parts.end)
    return moves


def with_streams(op: FlinkOperator, moves: dict[int, tuple[RelativeFile, int]]) -> FlinkOperator:
    """*op* (a pointer copy, or a self-contained copy) reading its keyed headers from *moves*."""
    return dataclasses.replace(op, subtasks=tuple(
        dataclasses.replace(sub, managed_keyed=_moved(sub.managed_keyed, *moves[sub.index]))
        if sub.index in moves else sub for sub in op.subtasks))


def _moved(handle, stream: RelativeFile, delta: int):
    if isinstance(handle, IncrementalRocksDB):
        return dataclasses.replace(handle, meta=stream)
    if not isinstance(handle, KeyGroupsStream):
        raise FlinkFormatError(f"a keyed handle of an unknown kind: {type(handle).__name__}")
    offsets = tuple(o + delta if o > 0 else o for o in handle.offsets)
    return dataclasses.replace(handle, stream=stream, offsets=offsets)
