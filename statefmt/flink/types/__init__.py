"""Flink value types, as read from serializer snapshots, and their columnar decoding.

Each type knows its Arrow type, its serializer's class name, whether its
encoding is fixed-width, and how to decode a *column*: the values starting at
many offsets of one buffer at once (:class:`Buf`). Fixed-width types are
decoded with numpy over the gathered bytes; variable-width ones read value by
value, and composite ones decode field by field, each field as one column.

The package names every type in one place (``types.Map``, ``types.Ttl``...);
its modules hold them by idea: the base and the bytes, single values, dates and
times, composites, collections, Avro (`avro`, `avro_composite`), and the state of
Flink's library operators, CEP and the interval join (`library`).
"""

from .avro import AvroDataError, AvroDecimal, AvroEnum, AvroFixed, AvroLogical, AvroNull, AvroString
from .avro_composite import Avro, AvroArray, AvroMap, AvroRecord, AvroUnion
from .base import LONG_MIN, FlinkType
from .buffer import Buf, as_dtype
from .composites import (POJO_NO_SUBCLASS, POJO_NULL, POJO_SUBCLASS, POJO_TAGGED, TTL_FIELD, Either, Nullable,
                         Pojo, Row, Timer, Ttl, Tuple, null_flagged)
from .containers import List, Map, PrimitiveArray, collection_sizes, decode_rounds
from .library import (Counted, DeweyNumber, Fields, Present, buffer_entry, event_id, lockable, nfa_state,
                      nfa_state_outer, node_id, outer_version, shared_buffer_edge, shared_buffer_node)
from .scalars import (BigDecimal, BigInteger, Bytes, Char, Enum, Opaque, Scalar, String, VoidNamespace,
                      is_void)
from .kryo import Kryo
from .temporal import Epoch, LocalDate, LocalDateTime, LocalTime, SecondsNanos, TimeWindow

__all__ = [
    "LONG_MIN", "FlinkType", "Buf", "as_dtype",
    "Scalar", "Char", "String", "BigInteger", "BigDecimal", "Enum", "VoidNamespace", "Opaque", "Bytes", "is_void",
    "Epoch", "SecondsNanos", "LocalDate", "LocalTime", "LocalDateTime", "TimeWindow",
    "Tuple", "Pojo", "Row", "Nullable", "Either", "Ttl", "Timer", "TTL_FIELD", "null_flagged",
    "POJO_NULL", "POJO_NO_SUBCLASS", "POJO_SUBCLASS", "POJO_TAGGED",
    "PrimitiveArray", "List", "Map", "decode_rounds", "collection_sizes",
    "Avro", "AvroRecord", "AvroUnion", "AvroArray", "AvroMap", "AvroString", "AvroFixed", "AvroEnum",
    "AvroLogical", "AvroDecimal", "AvroNull", "AvroDataError", "Kryo",
    "Fields", "Present", "Counted", "DeweyNumber", "event_id", "node_id", "lockable", "shared_buffer_edge",
    "shared_buffer_node", "nfa_state", "buffer_entry", "outer_version", "nfa_state_outer",
]
