"""A Flink `_metadata` file (versions 3 to 6, Flink 1.15 to 2.3) as typed values.

Version differences: v4 appends Java-serialized CheckpointProperties (kept
as opaque bytes, the *trailer*); v5 adds each operator's name and uid; v6
changes only the channel-state encoding, which savepoints leave empty.
Everything needed to write the file back is kept (`metadata_write`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from .binary import Reader
from .handles import (KeyedHandle, OperatorStream, StreamHandle, read_keyed_handle, read_operator_handle,
                      read_stream_handle)

MAGIC = 0x4960672D
MAGIC_BYTES = MAGIC.to_bytes(4, "big")
VERSIONS = (3, 4, 5, 6)
MASTER_STATE_MAGIC = 0xC96B1696 - (1 << 32)


def is_flink_metadata(first_bytes: bytes) -> bool:
    """Whether a file starting with *first_bytes* is a Flink `_metadata`."""
    return first_bytes[:4] == MAGIC_BYTES


FULLY_FINISHED = -1  # the subtask count Flink writes for a fully finished operator (no other negative)


@dataclass(frozen=True)
class SubtaskState:
    index: int
    managed_operator: tuple[OperatorStream, ...] = ()
    raw_operator: tuple[OperatorStream, ...] = ()
    managed_keyed: KeyedHandle | None = None
    raw_keyed: KeyedHandle | None = None
    finished: bool = False


@dataclass(frozen=True)
class FlinkOperator:
    name: str | None
    uid: str | None
    operator_id: str
    parallelism: int
    max_parallelism: int
    subtasks: tuple[SubtaskState, ...]
    fully_finished: bool = False
    coordinator: StreamHandle | None = None  # operator coordinator state (sources), kept as is

    @property
    def label(self) -> str:
        return self.uid or self.name or self.operator_id


@dataclass(frozen=True)
class FlinkMetadata:
    version: int
    checkpoint_id: int
    operators: tuple[FlinkOperator, ...]
    master_states: tuple[bytes, ...] = ()  # each master state's serialized bytes, kept as is
    trailer: bytes = b""  # v4+: Java-serialized CheckpointProperties, to the end of the file


def operator_id_hex(lower: int, upper: int) -> str:
    """Flink's OperatorID text: the lower then the upper long, big-endian hex."""
    return (lower & (2**64 - 1)).to_bytes(8, "big").hex() + (upper & (2**64 - 1)).to_bytes(8, "big").hex()


def parse_metadata(data: bytes, source: str = "_metadata") -> FlinkMetadata:
    r = Reader(data, source)
    if len(data) < 4 or not is_flink_metadata(data):
        raise FlinkFormatError(f"{source}: not a Flink _metadata file (bad magic number)")
    r.skip(4)
    version = r.int()
    if version not in VERSIONS:
        raise UnsupportedFlinkFeature(
            f"{source}: Flink _metadata version {version} is not supported (supported: 3 to 6)")
    checkpoint_id = r.long()
    master_states = []
    for _ in range(_count(r, "master states")):
        if r.int() != MASTER_STATE_MAGIC:
            raise r.error("bad master state magic number", r.pos - 4)
        master_states.append(r.bytes(_count(r, "master state bytes")))
    operators = tuple(_operator(r, version) for _ in range(_count(r, "operator states")))
    trailer = r.bytes(r.remaining)
    _check_trailer(trailer, version, source, r.pos - len(trailer))
    return FlinkMetadata(version, checkpoint_id, operators, tuple(master_states), trailer)


def _check_trailer(trailer: bytes, version: int, source: str, at: int) -> None:
    """v4+: the file ends with one Java-serialized CheckpointProperties, whole and alone
    (kept as bytes; parsed only to know `_metadata` is complete). v3 ends after the operators."""
    if version < 4:
        if trailer:
            raise FlinkFormatError(f"{source}: {len(trailer)} byte(s) after the last operator at offset {at}")
        return
    from .javaser import JavaObject, read_java_object

    r = Reader(trailer, source, base=at)
    if not trailer:
        raise FlinkFormatError(f"{source}: ends before its checkpoint properties (offset {at}): cut short")
    try:
        props = read_java_object(r)
    except FlinkFormatError as e:
        raise FlinkFormatError(f"{source}: its checkpoint properties are cut short or damaged ({e})") from None
    if not isinstance(props, JavaObject) or not props.cls.endswith("CheckpointProperties"):
        raise FlinkFormatError(f"{source}: the trailer at offset {at} is not Flink's checkpoint properties")
    if r.remaining:
        raise FlinkFormatError(f"{source}: {r.remaining} byte(s) after the checkpoint properties "
                               f"at offset {at + r.pos}")


def _count(r: Reader, what: str) -> int:
    n = r.int()
    if n < 0 or n > r.remaining:
        raise r.error(f"impossible number of {what}: {n}", r.pos - 4)
    return n


def _operator(r: Reader, version: int) -> FlinkOperator:
    name = uid = None
    if version >= 5:
        name = r.utf() or None
        uid = r.utf() or None
    operator_id = operator_id_hex(r.long(), r.long())
    label = f"operator {uid or name or operator_id}"
    parallelism, max_parallelism = r.int(), r.int()
    coordinator = read_stream_handle(r, f"{label} coordinator")
    n = r.int()
    if n == FULLY_FINISHED:
        return FlinkOperator(name, uid, operator_id, parallelism, max_parallelism, (), True, coordinator)
    if n < 0 or n > r.remaining:
        raise r.error(f"impossible number of subtasks: {n}", r.pos - 4)
    subtasks = tuple(_subtask(r, label) for _ in range(n))
    return FlinkOperator(name, uid, operator_id, parallelism, max_parallelism, subtasks,
                         coordinator=coordinator)


def _subtask(r: Reader, label: str) -> SubtaskState:
    index = r.int()
    if index < 0:
        return SubtaskState(-index - 1, finished=True)
    context = f"{label} subtask {index}"
    managed_op = tuple(h for h in (read_operator_handle(r, context)
                                   for _ in range(_count(r, "operator handles"))) if h)
    raw_op = tuple(h for h in (read_operator_handle(r, context)
                               for _ in range(_count(r, "operator handles"))) if h)
    managed_keyed = read_keyed_handle(r, context)
    raw_keyed = read_keyed_handle(r, context)
    for kind in ("input channel", "result subpartition"):
        if r.int() != 0:
            raise UnsupportedFlinkFeature(
                f"{r.source}: {context}: {kind} state (an unaligned checkpoint) is not supported")
    return SubtaskState(index, managed_op, raw_op, managed_keyed, raw_keyed)
