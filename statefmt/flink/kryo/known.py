"""Layouts statectl knows without the job's classes: Flink's own classes that jobs keep in Kryo.

The legacy `FlinkKafkaConsumer` keeps its offsets as `Tuple2<KafkaTopicPartition, Long>`, the
partition written by Kryo's FieldSerializer; its fields are flink-connector-kafka's (a class the
connector promises never to change, since savepoints hold it).
"""

from __future__ import annotations

from .classes import ACC_FINAL, ACC_PUBLIC, ClassInfo, FieldInfo, JavaType

_KTP = "org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartition"

KNOWN_LAYOUTS = {
    _KTP: ClassInfo(_KTP, "java.lang.Object", ACC_PUBLIC | ACC_FINAL, (
        FieldInfo("topic", JavaType("java.lang.String"), ACC_FINAL, _KTP),
        FieldInfo("partition", JavaType("int"), ACC_FINAL, _KTP),
        FieldInfo("cachedHash", JavaType("int"), ACC_FINAL, _KTP))),
}
