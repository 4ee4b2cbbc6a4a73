package org.apache.flink.streaming.connectors.kafka.internals;

import java.io.Serializable;

/**
 * A stand-in for the legacy Kafka consumer's partition class (flink-connector-kafka, not among
 * the suite's jars): the same name and fields, so Flink's KryoSerializer writes it as it writes
 * the connector's.
 */
public final class KafkaTopicPartition implements Serializable {
    private static final long serialVersionUID = 722083576322742325L;

    private final String topic;
    private final int partition;
    private final int cachedHash;

    public KafkaTopicPartition(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
        this.cachedHash = 31 * topic.hashCode() + partition;
    }
}
