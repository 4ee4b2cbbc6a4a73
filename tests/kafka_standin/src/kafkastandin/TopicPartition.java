package kafkastandin;

/** Two-field stand-in for Kafka's TopicPartition: a topic name and a partition number. */
public final class TopicPartition {
    final String topic;
    final int partition;

    public TopicPartition(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
    }
}
