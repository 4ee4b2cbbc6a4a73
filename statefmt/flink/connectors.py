"""Connector state as typed tables: FLIP-27 source reader splits, Sink V2 writer and
committer state (byte layouts in `connector_layouts.py`).

Flink keeps these states as lists of byte arrays (`BytePrimitiveArraySerializer`), each a
`SimpleVersionedSerialization` frame of the connector's own serializer. When an operator
state of one of the names in :data:`LAYOUTS` holds byte arrays, every element is parsed
when the savepoint is described: if all parse strictly as the state's known layout, the
state's ``value`` column is that layout's struct; otherwise (another connector) it is
``struct<version, bytes>``, one row per element, never dropped. An element whose frame
itself is broken (its length runs past the element, or bytes follow it) makes the state
unreadable, with one line naming the operator and the state.

These states are small (one element per split or bucket): elements are parsed one by one.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError
from . import connector_layouts as L
from . import kafka_layouts as K
from .binary import Reader
from .describe import FlinkUnreadable
from . import types as T

RAW = "raw"
FILE_SPLIT = "file source split"
KAFKA_SPLIT = "kafka partition split"
BUCKET = "file sink bucket"
COMMITTABLE = "file sink committable"

_S, _L, _I = pa.string(), pa.int64(), pa.int32()


def struct_type(*fields) -> pa.DataType:
    return pa.struct([pa.field(n, t) for n, t in fields])


SPLIT_FIELDS = (("split_id", _S), ("path", _S), ("offset", _L), ("length", _L), ("file_modification_time", _L),
                 ("file_size", _L), ("hostnames", pa.list_(_S)), ("reader_offset", _L),
                 ("reader_records_after_offset", _L))
_RECOVERABLE = lambda p: ((f"{p}_target", _S), (f"{p}_temp", _S), (f"{p}_offset", _L),  # noqa: E731
                          (f"{p}_version", _I), (f"{p}_raw", pa.binary()))
TYPES = {
    RAW: struct_type(("version", _I), ("bytes", pa.binary())),
    FILE_SPLIT: struct_type(("version", _I), *SPLIT_FIELDS),
    KAFKA_SPLIT: struct_type(("version", _I), ("topic", _S), ("partition", _I), ("starting_offset", _L),
                         ("stopping_offset", _L)),
    BUCKET: struct_type(("version", _I), ("bucket_id", _S), ("bucket_path", _S), ("in_progress_file_creation_time", _L),
                    ("in_progress_path", _S), *_RECOVERABLE("resumable")),
    COMMITTABLE: struct_type(("version", _I), ("checkpoint_id", _L), ("number_of_subtasks", _I), ("subtask_id", _I),
                         ("bucket_id", _S), ("pending_path", _S), ("pending_size", _L), *_RECOVERABLE("commit"),
                         ("in_progress_to_clean_up", _S), ("compacted_to_clean_up", _S), ("retries", _I),
                         ("request_state", _S), ("subtask_committables", _I), ("subtask_drained", _I),
                         ("subtask_failed", _I)),
}

# state name -> the layouts its elements are tried as, in order; each parser gives a list of row dicts
LAYOUTS = {"SourceReaderState": (FILE_SPLIT, KAFKA_SPLIT), "writer_raw_states": (BUCKET,),
           "streaming_committer_raw_states": (COMMITTABLE,)}
_PARSERS = {
    FILE_SPLIT: lambda v, b: [L.file_split(b)] if v == L.FILE_SPLIT_VERSION else _mismatch(v),
    KAFKA_SPLIT: lambda v, b: [K.kafka_split(b)] if v == K.KAFKA_SPLIT_VERSION else _mismatch(v),
    BUCKET: lambda v, b: [L.bucket_state(v, b)],
    COMMITTABLE: L.committables,
}


def _mismatch(version: int):
    raise L.LayoutMismatch(f"version {version}")


def schema(layout: str) -> pa.Schema:
    return pa.schema([pa.field("subtask", pa.int32(), nullable=False), pa.field("value", TYPES[layout])])


def frames(elements: list[bytes], where: str) -> list[tuple[int, bytes]]:
    """Each element's (version, payload); a broken frame raises one FlinkFormatError."""
    out = []
    for i, element in enumerate(elements):
        r = Reader(element, where)
        try:
            version, payload = L.frame(r)
        except (L.LayoutMismatch, FlinkFormatError) as e:
            raise FlinkFormatError(f"{where}: element {i} is damaged ({_reason(e)})") from None
        if r.remaining:
            raise FlinkFormatError(f"{where}: element {i} is damaged ({r.remaining} byte(s) after its "
                                   f"{len(payload)}-byte frame)")
        out.append((version, payload))
    return out


def _reason(e: Exception) -> str:
    text = str(e)
    return text.split(": ", 1)[1] if isinstance(e, FlinkFormatError) and ": " in text else text


def classify(name: str, elements: list[bytes], where: str) -> str:
    """The layout of state *name*'s *elements*: the first of its known layouts every one
    parses strictly as, else :data:`RAW`."""
    framed = frames(elements, where)
    for layout in LAYOUTS[name]:
        try:
            for version, payload in framed:
                _PARSERS[layout](version, payload)
        except L.LayoutMismatch:
            continue
        return layout
    return RAW


def table(layout: str, subtask: int, elements: list[bytes], where: str) -> pa.Table:
    """One subtask's elements as rows of *layout* (see :func:`schema`)."""
    rows = []
    for version, payload in frames(elements, where):
        if layout == RAW:
            rows.append({"version": version, "bytes": payload})
            continue
        try:
            rows += [{"version": version, **row} for row in _PARSERS[layout](version, payload)]
        except L.LayoutMismatch as e:  # the layout was checked when described: the bytes changed since
            raise FlinkFormatError(f"{where}: element is not a {layout} ({e})") from None
    values = pa.array(rows, type=TYPES[layout])
    return pa.Table.from_arrays([pa.array(np.full(len(rows), subtask, dtype=np.int32)), values],
                                schema=schema(layout))


def is_candidate(name: str, meta) -> bool:
    return name in LAYOUTS and meta.kind == "list" and isinstance(meta.value, T.Bytes)


def attach(info, read_elements) -> None:
    """Chooses the layout of each connector state of the described operator *info*
    (`describe.FlinkOperatorInfo`): its splits carry it, its schema and state type show
    it; a state with a damaged element becomes unreadable, with the reason.
    *read_elements(split, state)*: the state's elements in a split, as stored."""

    chosen = {}
    for name, meta in list(info.operator_states.items()):
        if not is_candidate(name, meta):
            continue
        try:
            elements = [e for s in info.operator_splits for e in read_elements(s, name)]
            chosen[name] = classify(name, elements, f"state {name!r}")
        except FlinkFormatError as e:
            info.operator_states.pop(name)
            info.states = [s for s in info.states if s.name != name]
            info.unreadable[name] = FlinkUnreadable(name, str(e), [])
    if not chosen:
        return
    info.connector_layouts.update(chosen)
    info.connector_schemas.update({name: schema(layout) for name, layout in chosen.items()})
    layouts = tuple(sorted(info.connector_layouts.items()))
    info.operator_splits = [replace(s, layouts=layouts) for s in info.operator_splits]
    info.states = [replace(s, arrow_type=TYPES[chosen[s.name]]) if s.name in chosen else s for s in info.states]
