"""The state of Flink's library operators: CEP's NFA and shared buffer, the interval join's buffers.

Their serializers write plain sequences of fields, so each value is a struct
decoded field by field, each field as one column (:class:`Fields`, which is a
:class:`Tuple` with names). Byte layouts, as Flink 1.x and 2.x write them:

- ``EventId``: int id, long timestamp (12 bytes).
- ``NodeId``: byte 1 then an EventId and the page name (``StringValue``), or byte 0 for null.
- ``DeweyNumber``: int n, n ints; shown as Flink prints it, the digits joined by dots.
- ``Lockable<T>``: int reference count, then T.
- ``SharedBufferEdge``: NodeId target, DeweyNumber version.
- ``SharedBufferNode``: int n, n × (int reference count, SharedBufferEdge).
- ``ComputationState``: state name (``StringValue``), previous NodeId, DeweyNumber version,
  long start timestamp, [long previous timestamp: only when the NFAState snapshot says so],
  byte 1 + EventId of the start event, or byte 0.
- ``NFAState``: int n + n partial matches, int m + m completed matches (ComputationStates).
- ``BufferEntry<T>`` (interval join): boolean hasBeenJoined, then T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import FlinkFormatError, UnsupportedFlinkFeature
from ..binary import Reader
from .base import FlinkType
from .buffer import Buf
from .composites import Tuple, _expand
from .containers import List, PrimitiveArray, collection_sizes
from .scalars import Scalar, String

CEP = "org.apache.flink.cep.nfa."
SHARED = CEP + "sharedbuffer."
JOIN = "org.apache.flink.streaming.api.operators.co.IntervalJoinOperator$"
_INT = Scalar("int", "org.apache.flink.api.common.typeutils.base.IntSerializer")
_LONG = Scalar("long", "org.apache.flink.api.common.typeutils.base.LongSerializer")
_BOOL = Scalar("boolean", "org.apache.flink.api.common.typeutils.base.BooleanSerializer")
_STRING = String("org.apache.flink.types.StringValue")


def _room(buf: Buf, starts: np.ndarray, limits) -> np.ndarray:
    """The bytes each value may take: up to its limit, else to the end of the buffer."""
    end = len(buf.data) if limits is None else np.asarray(limits, dtype=np.int64)
    return end - starts


def _refuse_counts(buf: Buf, starts: np.ndarray, counts: np.ndarray, room: np.ndarray, what: str,
                   unit: int = 1) -> None:
    """Counts whose items (at least *unit* bytes each) cannot fit in the bytes left."""
    bad = np.nonzero(counts * unit > room)[0]
    if len(bad):
        i = int(bad[0])
        raise FlinkFormatError(f"{buf.source}: {what} of {int(counts[i])} runs past its value "
                               f"({int(room[i])} byte(s) left) at offset {buf.base + int(starts[i])}")


@dataclass(frozen=True)
class Fields(Tuple):
    """Named fields one after another (as a Tuple decodes them); *label* names the type."""
    field_names: tuple[str, ...] = ()
    label: str = ""

    @property
    def names(self) -> list[str]:
        return list(self.field_names)

    def describe(self):
        return self.label


def _fields(label: str, serializer: str, *named: tuple[str, FlinkType]) -> Fields:
    return Fields(label, tuple(t for _, t in named), serializer, tuple(n for n, _ in named), label)


@dataclass(frozen=True)
class Present(FlinkType):
    """A byte 1 then the value, or a byte 0 for null (the inverse of Flink's usual null flag)."""
    inner: FlinkType
    serializer: str = ""

    def arrow(self):
        return self.inner.arrow()

    @property
    def decodable(self):
        return self.inner.decodable

    def read(self, r: Reader):
        at = r.pos
        flag = r.ubyte()
        if flag > 1:
            raise r.error(f"bad presence flag {flag} in a {self.describe()}", at)
        return self.inner.read(r) if flag else None

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        flags = buf.gather(starts, 1)[:, 0]
        if len(flags) and flags.max() > 1:
            i = int(np.argmax(flags > 1))
            raise FlinkFormatError(f"{buf.source}: bad presence flag {int(flags[i])} in a {self.describe()} "
                                   f"at offset {buf.base + int(starts[i])}")
        present = flags == 1
        ends = starts + 1
        sub_limits = None if limits is None else np.asarray(limits, dtype=np.int64)[present]
        values, sub_ends = self.inner.column(buf, ends[present], sub_limits)
        ends[present] = sub_ends
        return _expand(values, present), ends

    def describe(self):
        return self.inner.describe()


@dataclass(frozen=True)
class Absent(FlinkType):
    """A field this version of a serializer does not write: no bytes, always null."""
    inner: FlinkType
    width = 0

    def arrow(self):
        return self.inner.arrow()

    def read(self, r):
        return None

    def from_matrix(self, m):
        return pa.nulls(len(m), self.arrow())


@dataclass(frozen=True)
class Counted(List):
    """A List whose element count is checked against the bytes left before any element is
    decoded (every element takes at least one byte)."""

    def read(self, r: Reader):
        n = r.int()
        if n < 0 or n > r.remaining:
            raise r.error(f"bad count {n} ({r.remaining} byte(s) left)", r.pos - 4)
        return [self.element.read(r) for _ in range(n)]

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        _refuse_counts(buf, starts, collection_sizes(buf, starts), _room(buf, starts, limits) - 4,
                       "a list count")
        return super().column(buf, starts, limits)


_DIGITS = PrimitiveArray(_INT)


@dataclass(frozen=True)
class DeweyNumber(FlinkType):
    """CEP's version numbers: int n, n ints, shown as their dotted string ("1.0.2")."""
    serializer: str = ""

    def arrow(self):
        return pa.string()

    def read(self, r: Reader):
        n = r.int()
        if n < 0 or 4 * n > r.remaining:
            raise r.error(f"bad DeweyNumber length {n} ({r.remaining} byte(s) left)", r.pos - 4)
        return ".".join(str(r.int()) for _ in range(n))

    def column(self, buf, starts, limits=None):
        import pyarrow.compute as pc  # here, not at the top: loading a savepoint needs none of it

        starts = np.asarray(starts, dtype=np.int64)
        counts = collection_sizes(buf, starts)
        _refuse_counts(buf, starts, counts, _room(buf, starts, limits) - 4, "a DeweyNumber length", 4)
        digits, ends = _DIGITS.column(buf, starts)
        return pc.binary_join(digits.cast(pa.list_(pa.string())), "."), ends

    def describe(self):
        return "DeweyNumber"


def event_id(serializer: str = SHARED + "EventId$EventIdSerializer") -> Fields:
    return _fields("EventId", serializer, ("id", _INT), ("timestamp", _LONG))


def node_id(event: FlinkType) -> Present:
    serializer = SHARED + "NodeId$NodeIdSerializer"
    return Present(_fields("NodeId", serializer, ("event_id", event), ("page_name", _STRING)), serializer)


def lockable(element: FlinkType) -> Fields:
    return _fields(f"Lockable<{element.describe()}>", SHARED + "Lockable$LockableTypeSerializer",
                   ("ref_count", _INT), ("element", element))


def shared_buffer_edge(target: FlinkType, version: FlinkType) -> Fields:
    return _fields("SharedBufferEdge", SHARED + "SharedBufferEdge$SharedBufferEdgeSerializer",
                   ("target", target), ("version", version))


def shared_buffer_node(edge: FlinkType) -> Fields:
    serializer = SHARED + "SharedBufferNodeSerializer"
    return _fields("SharedBufferNode", serializer,
                   ("edges", Counted(_fields("edge", serializer, ("ref_count", _INT), ("edge", edge)), serializer)))


def computation_state(version: FlinkType, node: FlinkType, event: FlinkType, previous_timestamp: bool) -> Fields:
    return _fields("ComputationState", CEP + "NFAStateSerializer",
                   ("state_name", _STRING), ("previous_entry", node), ("version", version),
                   ("start_timestamp", _LONG), ("previous_timestamp", _LONG if previous_timestamp else Absent(_LONG)),
                   ("start_event", Present(event, CEP + "NFAStateSerializer")))


def nfa_state(version: FlinkType, node: FlinkType, event: FlinkType, previous_timestamp: bool) -> Fields:
    """NFAStateSerializer's value; its snapshot's nested serializers are (version, node id, event id)."""
    serializer = CEP + "NFAStateSerializer"
    states = Counted(computation_state(version, node, event, previous_timestamp), serializer)
    return _fields("NFAState", serializer, ("partial_matches", states), ("completed_matches", states))


def buffer_entry(element: FlinkType) -> Fields:
    return _fields(f"BufferEntry<{element.describe()}>", JOIN + "BufferEntrySerializer",
                   ("has_been_joined", _BOOL), ("element", element))


# --- reading their snapshots -----------------------------------------------------------------

def _built(name: str, count: int, make):
    """A composite snapshot's builder (outer, nested, class) that first checks how many nested
    serializers the snapshot holds, so a damaged one is refused in one line."""
    def build(outer, nested, cls):
        if len(nested) != count:
            raise FlinkFormatError(f"a {name} serializer snapshot holds {len(nested)} nested serializer(s), "
                                   f"not {count}")
        return make(outer, *nested)
    return build


NFA_STATE = _built("NFAState", 3, lambda o, version, node, event: nfa_state(version, node, event, o))
NODE_ID = _built("NodeId", 1, lambda o, event: node_id(event))
LOCKABLE = _built("Lockable", 1, lambda o, element: lockable(element))
SHARED_BUFFER_NODE = _built("SharedBufferNode", 1, lambda o, edge: shared_buffer_node(edge))
SHARED_BUFFER_EDGE = _built("SharedBufferEdge", 2, lambda o, target, version: shared_buffer_edge(target, version))
BUFFER_ENTRY = _built("BufferEntry", 1, lambda o, element: buffer_entry(element))


def outer_version(name: str, *known: int):
    """An outer-snapshot reader for a composite snapshot without an outer payload: refuses
    versions other than *known*, naming the snapshot."""
    def read(r: Reader, version: int):
        if version not in known:
            raise UnsupportedFlinkFeature(f"{r.source}: {name} serializer snapshot version {version} is not "
                                          f"supported ({', '.join(map(str, known))})")
    return read


def nfa_state_outer(r: Reader, version: int) -> bool:
    """Whether computation states carry their previous timestamp: no in version 1, a flag in 2."""
    if version == 1:
        return False
    if version == 2:
        return r.bool()
    raise UnsupportedFlinkFeature(f"{r.source}: NFAState serializer snapshot version {version} is not "
                                  "supported (1, 2)")
