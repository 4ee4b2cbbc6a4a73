"""Byte layouts of a KafkaSource's state (flink-connector-kafka): its reader's splits and its
enumerator's checkpoint. Parsed strictly, as `connector_layouts.py` parses (any mismatch is a
:class:`~.connector_layouts.LayoutMismatch`). Integers are big-endian (`DataOutputStream`).

* KafkaPartitionSplit v0: UTF topic, int partition, long starting offset, long stopping
  offset (`Long.MIN_VALUE`: none).
* KafkaSourceEnumState v3: int n, int split serializer version, n × (int length, split
  bytes, int assignment status), bool initial discovery finished; v2: int n, n × (UTF
  topic, int partition, int status), bool; v1: int n, n × (UTF topic, int partition);
  v0: the split assignments as the connector base writes them (int subtasks, int split
  serializer version, per subtask: int subtask id, int n, n × (int length, split bytes)).
"""

from __future__ import annotations

from .binary import Reader
from .connector_layouts import LayoutMismatch, _count, _run

KAFKA_SPLIT_VERSION = 0
KAFKA_ENUM_VERSIONS = (0, 1, 2, 3)
NO_STOPPING_OFFSET = -(1 << 63)  # also MIGRATED, the starting offset of a v1 or v2 enumerator's split
ASSIGNMENT_STATUS = ("ASSIGNED", "UNASSIGNED")  # AssignmentStatus status codes 0, 1


def _split(r: Reader) -> dict:
    return {"topic": r.utf(), "partition": r.int(), "starting_offset": r.long(), "stopping_offset": r.long()}


def kafka_split(payload: bytes) -> dict:
    """A `KafkaPartitionSplit` (serializer version 0): topic, partition, starting and stopping offset."""
    return _run(_split, payload, "kafka partition split")


def _sized_split(r: Reader, split_version: int) -> dict:
    if split_version != KAFKA_SPLIT_VERSION:
        raise LayoutMismatch(f"kafka split serializer version {split_version}")
    n = r.int()
    if n < 0 or n > r.remaining:
        raise LayoutMismatch(f"kafka split of {n} byte(s) with {r.remaining} left")
    return kafka_split(r.bytes(n))


def _status(r: Reader) -> str:
    code = r.int()
    if not 0 <= code < len(ASSIGNMENT_STATUS):
        raise LayoutMismatch(f"assignment status {code}")
    return ASSIGNMENT_STATUS[code]


def _row(split: dict | None = None, topic=None, partition=None, status=None, subtask=None, done=None) -> dict:
    split = split or {"topic": topic, "partition": partition, "starting_offset": None, "stopping_offset": None}
    return {**split, "assignment_status": status, "subtask": subtask, "initial_discovery_finished": done}


def _v3(r: Reader) -> list[dict]:
    n, split_version = r.int(), r.int()
    entries = [(_sized_split(r, split_version), _status(r)) for _ in range(_count(r, n, 8))]
    done = r.bool()
    return [_row(s, status=st, done=done) for s, st in entries]


def _v2(r: Reader) -> list[dict]:
    entries = [(r.utf(), r.int(), _status(r)) for _ in range(_count(r, r.int(), 10))]
    done = r.bool()
    return [_row(topic=t, partition=p, status=st, done=done) for t, p, st in entries]


def _v1(r: Reader) -> list[dict]:
    return [_row(topic=r.utf(), partition=r.int(), status="ASSIGNED", done=True)
            for _ in range(_count(r, r.int(), 6))]


def _v0(r: Reader) -> list[dict]:
    n_subtasks, split_version = r.int(), r.int()
    rows = []
    for _ in range(_count(r, n_subtasks, 8)):
        subtask = r.int()
        rows += [_row(_sized_split(r, split_version), status="ASSIGNED", subtask=subtask, done=True)
                 for _ in range(_count(r, r.int(), 4))]
    return rows


_ENUM = {0: _v0, 1: _v1, 2: _v2, 3: _v3}


def kafka_enumerator(version: int, payload: bytes) -> list[dict]:
    """A `KafkaSourceEnumState` (serializer version 0 to 3): one row per partition it knows.
    v1 and v2 keep no offsets (null); v0 gives the subtask each split was assigned to; v0 and v1
    keep no discovery flag: true, as the connector restores them."""
    if version not in _ENUM:
        raise LayoutMismatch(f"kafka enumerator version {version}")
    return _run(_ENUM[version], payload, "kafka enumerator state")
