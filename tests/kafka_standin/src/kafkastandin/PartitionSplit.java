package kafkastandin;

import org.apache.flink.api.connector.source.SourceSplit;

/** A KafkaSource split as the connector keeps it: a partition, where reading starts, where it stops. */
public final class PartitionSplit implements SourceSplit {
    static final long NO_STOPPING_OFFSET = Long.MIN_VALUE;

    final TopicPartition tp;
    final long startingOffset;
    final long stoppingOffset;

    public PartitionSplit(TopicPartition tp, long startingOffset, long stoppingOffset) {
        this.tp = tp;
        this.startingOffset = startingOffset;
        this.stoppingOffset = stoppingOffset;
    }

    @Override
    public String splitId() {
        return tp.topic + "-" + tp.partition;
    }
}
