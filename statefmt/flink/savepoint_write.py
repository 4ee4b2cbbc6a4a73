"""A new canonical Flink savepoint's `_metadata`, from the streams statectl wrote.

Flink 2.x layout (metadata version 6): per operator its subtasks, each with a
`KeyGroupsSavepointStateHandle` over its key-group range and/or an
`OperatorStreamStateHandle`, both pointing at a file beside `_metadata`
(`RelativeFileStateHandle`); no master or coordinator state; then the
Java-serialized `CheckpointProperties` of a canonical savepoint, which is the
same for every one (:data:`CANONICAL_TRAILER`, as Flink 2.3 writes it, and Flink
1.17 and 1.20 too). A savepoint derived from a Flink 1.x one keeps its metadata
version (4, which names operators by OperatorID alone: no names, no uids), so the
release that wrote the base restores it.

A native operator's subtasks hold an `IncrementalRemoteKeyedStateHandle` instead
(:class:`KeyedNativeFiles`, written by `native_write`): its keyed header as the
meta information stream, its RocksDB files by their local names, all private, as
Flink's own native savepoints hold them. When every keyed operator is native, the
trailer names the NATIVE format (:data:`NATIVE_TRAILER`), as Flink's does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..errors import FlinkFormatError
from ..fs import Location
from ..ids import operator_id_for_uid
from .handles import IncrementalRocksDB, KeyGroupsStream, OperatorStateInfo, OperatorStream, RelativeFile
from .metadata import FlinkMetadata, FlinkOperator, SubtaskState
from .metadata_write import encode_metadata
from .streamio import METADATA

METADATA_VERSION = 6
OLDEST_WRITTEN_VERSION = 4  # Flink 1.17 to 1.20; version 3 has no CheckpointProperties trailer
CHECKPOINT_ID = 1

CANONICAL_TRAILER = bytes.fromhex(
    "aced0005737200386f72672e6170616368652e666c696e6b2e72756e74696d652e636865636b706f696e742e43686563"
    "6b706f696e7450726f7065727469657300000000000000020200085a00106469736361726443616e63656c6c65645a00"
    "0d646973636172644661696c65645a000f6469736361726446696e69736865645a000f6469736361726453756273756d"
    "65645a00106469736361726453757370656e6465645a0006666f726365645a0009756e636c61696d65644c000e636865"
    "636b706f696e74547970657400324c6f72672f6170616368652f666c696e6b2f72756e74696d652f636865636b706f69"
    "6e742f536e617073686f74547970653b787000000000000100737200316f72672e6170616368652e666c696e6b2e7275"
    "6e74696d652e636865636b706f696e742e53617665706f696e7454797065a087d308a45814b80200034c000a666f726d"
    "6174547970657400354c6f72672f6170616368652f666c696e6b2f636f72652f657865637574696f6e2f53617665706f"
    "696e74466f726d6174547970653b4c00046e616d657400124c6a6176612f6c616e672f537472696e673b4c0014706f73"
    "74436865636b706f696e74416374696f6e7400484c6f72672f6170616368652f666c696e6b2f72756e74696d652f6368"
    "65636b706f696e742f53617665706f696e745479706524506f7374436865636b706f696e74416374696f6e3b78707e72"
    "00336f72672e6170616368652e666c696e6b2e636f72652e657865637574696f6e2e53617665706f696e74466f726d61"
    "745479706500000000000000001200007872000e6a6176612e6c616e672e456e756d0000000000000000120000787074"
    "000943414e4f4e4943414c74000953617665706f696e747e7200466f72672e6170616368652e666c696e6b2e72756e74"
    "696d652e636865636b706f696e742e53617665706f696e745479706524506f7374436865636b706f696e74416374696f"
    "6e00000000000000001200007871007e00097400044e4f4e45"
)

# The same properties with the format type NATIVE (a Java string of 6 characters, not 9).
NATIVE_TRAILER = CANONICAL_TRAILER.replace(b"\x74\x00\x09CANONICAL", b"\x74\x00\x06NATIVE")


@dataclass(frozen=True)
class KeyedStreamFile:
    """One subtask's keyed stream: its key-group range, the offset of each key group, its file."""
    subtask: int
    start: int
    offsets: tuple[int, ...]
    file: str
    size: int
    entries: int = 0


@dataclass(frozen=True)
class KeyedNativeFiles:
    """One subtask's native RocksDB snapshot: its key-group range, its meta information stream
    (the keyed header) and its database files, each (RocksDB name, file, size)."""
    subtask: int
    start: int
    count: int
    meta: tuple[str, int]
    files: tuple[tuple[str, str, int], ...]
    entries: int = 0

    @property
    def size(self) -> int:
        return self.meta[1] + sum(size for _, _, size in self.files)

    def handle(self) -> IncrementalRocksDB:
        """Flink's handle of it, as a native savepoint holds one: every file private, a new
        backend id and handle id."""
        return IncrementalRocksDB(
            CHECKPOINT_ID, str(uuid.uuid4()), self.start, self.count, RelativeFile(*self.meta), (),
            tuple((name, RelativeFile(file, size)) for name, file, size in self.files), self.size,
            str(uuid.uuid4()))


@dataclass(frozen=True)
class OperatorStreamFile:
    """One subtask's operator state stream: (name, mode, offsets) per state, its file."""
    subtask: int
    states: tuple[tuple[str, str, tuple[int, ...]], ...]
    file: str
    size: int
    entries: int = 0


def flink_operator(uid: str | None, parallelism: int, max_parallelism: int,
                   keyed: list[KeyedStreamFile | KeyedNativeFiles], operator: list[OperatorStreamFile],
                   operator_id: str | None = None) -> FlinkOperator:
    """The operator's record: every subtask, with the streams written for it (or none). It is
    named by its *uid*, or by *operator_id* alone (uid None: an operator Flink knows by id only)."""
    keyed_of = {k.subtask: k for k in keyed}
    op_of = {o.subtask: o for o in operator}
    subtasks = []
    for i in range(parallelism):
        k, o = keyed_of.get(i), op_of.get(i)
        managed_keyed = None if k is None else k.handle() if isinstance(k, KeyedNativeFiles) else \
            KeyGroupsStream("canonical", k.start, k.offsets, RelativeFile(k.file, k.size))
        managed_operator = () if o is None else (OperatorStream(
            tuple(OperatorStateInfo(n, m, offs) for n, m, offs in o.states), RelativeFile(o.file, o.size)),)
        subtasks.append(SubtaskState(i, managed_operator, (), managed_keyed, None))
    return FlinkOperator(uid, uid, operator_id or operator_id_for_uid(uid), parallelism, max_parallelism,
                         tuple(subtasks))


def metadata_bytes(operators: list[FlinkOperator], version: int = METADATA_VERSION) -> bytes:
    """A canonical savepoint's `_metadata` of *operators*, in metadata *version* (4 to 6)."""
    if version < OLDEST_WRITTEN_VERSION:
        raise FlinkFormatError(f"cannot write Flink _metadata version {version}: statectl writes "
                               f"versions {OLDEST_WRITTEN_VERSION} to {METADATA_VERSION}")
    keyed = [s.managed_keyed for op in operators for s in op.subtasks if s.managed_keyed is not None]
    native = bool(keyed) and all(isinstance(h, IncrementalRocksDB) for h in keyed)
    return encode_metadata(FlinkMetadata(version, CHECKPOINT_ID, tuple(operators), (),
                                         NATIVE_TRAILER if native else CANONICAL_TRAILER))


def commit_flink(out: Location, operators: list[FlinkOperator]) -> None:
    """Write `_metadata` last, atomically: before it exists the folder holds no savepoint."""
    out.child(METADATA).write_bytes_atomically(metadata_bytes(operators))
