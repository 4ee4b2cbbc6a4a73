"""The operator coordinator's state (a FLIP-27 source's split enumerator checkpoint, kept in
`_metadata`) as one more operator state of its operator: named :data:`COORDINATOR`, kind
``coordinator``, read like an operator list state (its table: ``subtask``, always 0, and
``value``).

The enumerator is recognised from its bytes, strictly (`connector_layouts.py`,
`kafka_layouts.py`): a FileSource's `PendingSplitsCheckpoint` gives one row per split not yet
assigned and one per path already processed; a KafkaSource's enumerator one row per partition
it knows. Anything else (another source's enumerator, another coordinator) is one row
``(version, bytes)``: the enumerator serializer's version and its bytes, or a null version and
the whole state when it is not a source coordinator's. Nothing is dropped; the state is
written back as it was read (`_metadata` keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..errors import FlinkFormatError, MissingFileError
from ..vocabulary import COORDINATOR_KIND
from . import connector_layouts as L
from .connectors import SPLIT_FIELDS, struct_type
from .describe import FlinkFile, FlinkSplit, FlinkStateInfo, FlinkUnreadable
from .handles import InlineStream
from .kafka_layouts import kafka_enumerator
from .streamio import lineage_roots_of, read_stream, split_base, stream_location
from . import types as T

COORDINATOR = "coordinator"
SERIALIZER = "operator coordinator state"
RAW = "raw enumerator"
FILE_ENUMERATOR = "file source enumerator"
KAFKA_ENUMERATOR = "kafka source enumerator"

_S, _L, _I = pa.string(), pa.int64(), pa.int32()
TYPES = {
    RAW: struct_type(("version", _I), ("bytes", pa.binary())),
    FILE_ENUMERATOR: struct_type(("version", _I), ("entry", _S), *SPLIT_FIELDS),
    KAFKA_ENUMERATOR: struct_type(("version", _I), ("topic", _S), ("partition", _I), ("starting_offset", _L),
                              ("stopping_offset", _L), ("assignment_status", _S), ("subtask", _I),
                              ("initial_discovery_finished", pa.bool_())),
}


@dataclass(frozen=True)
class CoordinatorPart:
    """An operator's coordinator state as a table: its name, layout and one split."""
    name: str
    layout: str
    split: FlinkSplit


def schema(layout: str) -> pa.Schema:
    return pa.schema([pa.field("subtask", _I, nullable=False), pa.field("value", TYPES[layout])])


def _file_rows(version: int, payload: bytes) -> list[dict]:
    _, splits, paths = L.pending_splits(payload)
    rows = [{"entry": "pending split", **s} for s in splits]
    return rows + [{"entry": "processed path", "path": p} for p in paths]


def parse(data: bytes) -> tuple[str, list[dict]]:
    """(layout, rows) of a coordinator's state: the first enumerator layout every byte of it
    parses as, else :data:`RAW`."""
    try:
        _, version, payload = L.coordinator_checkpoint(data)
    except L.LayoutMismatch:
        return RAW, [{"version": None, "bytes": data}]
    for layout, rows_of in ((FILE_ENUMERATOR, _file_rows), (KAFKA_ENUMERATOR, kafka_enumerator)):
        try:
            rows = rows_of(version, payload)
        except L.LayoutMismatch:
            continue
        if rows or layout == FILE_ENUMERATOR:  # a few bytes of another enumerator can read as no partitions
            return layout, [{"version": version, **row} for row in rows]
    return RAW, [{"version": version, "bytes": payload}]


def name_for(info) -> str:
    """:data:`COORDINATOR`, or with ``#2`` after it when an operator state has that name."""
    return COORDINATOR if COORDINATOR not in info.operator_states else f"{COORDINATOR}#2"


def attach(info, op, base) -> None:
    """Lists the coordinator state of *op* (`metadata.FlinkOperator`) in its described *info*:
    its layout chosen from its bytes; a missing or short file makes it unreadable, with the reason."""
    handle, name = op.coordinator, name_for(info)
    files = [] if isinstance(handle, InlineStream) else [FlinkFile(str(stream_location(base, handle)), handle.size)]
    try:
        layout, _ = parse(read_stream(base, handle))
    except (FlinkFormatError, MissingFileError) as e:
        info.unreadable[name] = FlinkUnreadable(name, str(e), files)
        return
    split = FlinkSplit(str(base), op.operator_id, 0, op.max_parallelism, handle, roots=lineage_roots_of(base),
                       layouts=((name, layout),))
    info.coordinator = CoordinatorPart(name, layout, split)
    info.connector_schemas[name] = schema(layout)
    info.states.append(FlinkStateInfo(name, COORDINATOR_KIND, SERIALIZER, T.Bytes(), TYPES[layout], False, handle.size))
    info.files = sorted(set(info.files) | set(files), key=lambda f: f.path)


def table(split: FlinkSplit, batch_rows: int) -> list[pa.RecordBatch]:
    """The coordinator state's rows (its split made by :func:`attach`)."""
    data = read_stream(split_base(split), split.handle)
    layout, rows = parse(data)
    expected = split.layouts[0][1]
    if layout != expected:  # chosen when described: the bytes changed since
        raise FlinkFormatError(f"operator {split.operator_id}: its coordinator state is no longer a {expected}")
    values = pa.array(rows, type=TYPES[layout])
    subtask = pa.array([0] * len(rows), type=_I)
    return pa.Table.from_arrays([subtask, values], schema=schema(layout)).to_batches(batch_rows)
