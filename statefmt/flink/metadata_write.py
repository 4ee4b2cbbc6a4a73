"""Writes a Flink `_metadata` file: the exact inverse of :func:`metadata.parse_metadata`.

API:

- ``encode_metadata(meta: FlinkMetadata) -> bytes``: the `_metadata` bytes of *meta*
  (versions 3 to 6). ``encode_metadata(parse_metadata(b)) == b`` for every file Flink
  writes. To build a new one, construct the dataclasses of `metadata` and `handles`;
  a new Flink 2.x savepoint is ``FlinkMetadata(6, checkpoint_id, operators, (), trailer)``
  with the trailer of a savepoint of the same format type (CANONICAL or NATIVE), since
  the trailer is the Java-serialized CheckpointProperties that Flink reads back.
- ``encode_stream_handle(w, handle)``, ``encode_keyed_handle(w, handle)``,
  ``encode_operator_handle(w, handle)``: one handle (``None`` writes the null handle)
  onto a :class:`binary_write.Writer`; the inverses of `handles.read_*_handle`.
- ``operator_id_bytes(operator_id)``: the 16 bytes of an OperatorID's hex text.

Which handle type byte is written follows the values: a :class:`KeyGroupsStream` with
layout ``canonical`` is 7, ``native`` with a *handle_id* 12, without 3; an
:class:`IncrementalRocksDB` with a *handle_id* 11, without 5; a :class:`SegmentFile`
16 when *empty*, else 15; an :class:`OperatorStream` with *segment* dirs 17, else 4.
"""

from __future__ import annotations

from ..errors import FlinkFormatError
from . import handles as H
from .binary_write import Writer
from .metadata import (FULLY_FINISHED, MAGIC, MASTER_STATE_MAGIC, VERSIONS, FlinkMetadata, FlinkOperator,
                       SubtaskState)


def encode_metadata(meta: FlinkMetadata) -> bytes:
    if meta.version not in VERSIONS:
        raise FlinkFormatError(f"cannot write Flink _metadata version {meta.version} (supported: 3 to 6)")
    w = Writer()
    w.int(MAGIC)
    w.int(meta.version)
    w.long(meta.checkpoint_id)
    w.int(len(meta.master_states))
    for state in meta.master_states:
        w.int(MASTER_STATE_MAGIC)
        w.int(len(state))
        w.bytes(state)
    w.int(len(meta.operators))
    for op in meta.operators:
        _operator(w, op, meta.version)
    w.bytes(meta.trailer)
    return w.getvalue()


def operator_id_bytes(operator_id: str) -> bytes:
    """OperatorID hex text (lower long then upper long, big-endian) as its 16 bytes."""
    try:
        raw = bytes.fromhex(operator_id)
    except ValueError:
        raw = b""
    if len(raw) != 16:
        raise FlinkFormatError(f"not an operator id (32 hex digits): {operator_id!r}")
    return raw


def _operator(w: Writer, op: FlinkOperator, version: int) -> None:
    if version >= 5:
        w.utf(op.name or "")
        w.utf(op.uid or "")
    w.bytes(operator_id_bytes(op.operator_id))
    w.int(op.parallelism)
    w.int(op.max_parallelism)
    encode_stream_handle(w, op.coordinator)
    if op.fully_finished:
        w.int(FULLY_FINISHED)
        return
    w.int(len(op.subtasks))
    for subtask in op.subtasks:
        _subtask(w, subtask)


def _subtask(w: Writer, s: SubtaskState) -> None:
    if s.finished:
        w.int(-s.index - 1)
        return
    w.int(s.index)
    for streams in (s.managed_operator, s.raw_operator):
        w.int(len(streams))
        for handle in streams:
            encode_operator_handle(w, handle)
    encode_keyed_handle(w, s.managed_keyed)
    encode_keyed_handle(w, s.raw_keyed)
    w.int(0)  # input channel state
    w.int(0)  # result subpartition state


def encode_stream_handle(w: Writer, h: H.StreamHandle | None) -> None:
    if h is None:
        w.ubyte(H.NULL)
    elif isinstance(h, H.InlineStream):
        w.ubyte(H.BYTE_STREAM)
        w.utf(h.name)
        w.int(len(h.data))
        w.bytes(h.data)
    elif isinstance(h, H.AbsoluteFile):
        w.ubyte(H.FILE)
        w.long(h.size)
        w.utf(h.path)
    elif isinstance(h, H.RelativeFile):
        w.ubyte(H.RELATIVE_FILE)
        w.utf(h.relative_path)
        w.long(h.size)
    elif isinstance(h, H.SegmentFile):
        w.ubyte(H.EMPTY_SEGMENT_FILE if h.empty else H.SEGMENT_FILE)
        w.long(h.start)
        w.long(h.size)
        w.int(h.scope)
        w.utf(h.path)
        w.utf(h.logical_file_id)
    else:
        raise TypeError(f"not a stream handle: {h!r}")


def encode_keyed_handle(w: Writer, h: H.KeyedHandle | None) -> None:
    if h is None:
        w.ubyte(H.NULL)
    elif isinstance(h, H.KeyGroupsStream):
        if h.layout == "canonical":
            w.ubyte(H.KEY_GROUPS_SAVEPOINT)
        else:
            w.ubyte(H.KEY_GROUPS if h.handle_id is None else H.KEY_GROUPS_V2)
        w.int(h.start)
        w.int(len(h.offsets))
        w.longs(h.offsets)
        encode_stream_handle(w, h.stream)
        if h.layout != "canonical" and h.handle_id is not None:
            w.utf(h.handle_id)
    elif isinstance(h, H.IncrementalRocksDB):
        v2 = h.handle_id is not None
        w.ubyte(H.INCREMENTAL_V2 if v2 else H.INCREMENTAL_V1)
        w.long(h.checkpoint_id)
        w.utf(h.backend_id)
        w.int(h.start)
        w.int(h.count)
        if v2:
            w.long(h.checkpointed_size or 0)
        encode_stream_handle(w, h.meta)
        for named in (h.shared, h.private):
            w.int(len(named))
            for local_name, stream in named:
                w.utf(local_name)
                encode_stream_handle(w, stream)
        if v2:
            w.utf(h.handle_id)
    else:
        raise TypeError(f"not a keyed state handle: {h!r}")


def encode_operator_handle(w: Writer, h: H.OperatorStream | None) -> None:
    if h is None:
        w.ubyte(H.NULL)
        return
    w.ubyte(H.OPERATOR_STREAM if h.segment is None else H.SEGMENT_OPERATOR)
    w.int(len(h.states))
    for state in h.states:
        w.utf(state.name)
        w.ubyte(H.DISTRIBUTION_MODES.index(state.mode))
        w.int(len(state.offsets))
        w.longs(state.offsets)
    if h.segment is not None:
        w.utf(h.segment.task_owned)
        w.utf(h.segment.shared)
        w.bool(h.segment.empty)
    encode_stream_handle(w, h.stream)
