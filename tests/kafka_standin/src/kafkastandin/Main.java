package kafkastandin;

import org.apache.flink.core.io.SimpleVersionedSerialization;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Writes KafkaSource split and enumerator bytes into the folder given, one file per case:
 * split-*.bin as a SourceReaderState element (Flink's SimpleVersionedSerialization frame),
 * enum-v*.bin as the enumerator serializer's bytes, file-split*.bin by Flink's own FileSource
 * split serializer (FileSplitCases). The cases are the ones
 * tests/statefmt/flink/test_kafka_layouts.py expects. */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws IOException {
        Path dir = Paths.get(args[0]);
        Files.createDirectories(dir);
        SplitSerializer serializer = new SplitSerializer();
        PartitionSplit a = split("payments.events", 2, 4711L, PartitionSplit.NO_STOPPING_OFFSET);
        PartitionSplit b = split("zahlungen-\u00fc\u20ac", 0, -2L, 1000L);
        PartitionSplit moved = split("payments.events", 2, 9000L, PartitionSplit.NO_STOPPING_OFFSET);
        write(dir, "split-a", SimpleVersionedSerialization.writeVersionAndSerialize(serializer, a));
        write(dir, "split-b", SimpleVersionedSerialization.writeVersionAndSerialize(serializer, b));
        write(dir, "split-a-moved", SimpleVersionedSerialization.writeVersionAndSerialize(serializer, moved));
        List<PartitionSplit> both = Arrays.asList(a, b);
        write(dir, "enum-v3", EnumStateWriter.v3(both, new int[] {0, 1}, true));
        write(dir, "enum-v2", EnumStateWriter.v2(both, new int[] {1, 0}, false));
        write(dir, "enum-v1", EnumStateWriter.v1(both));
        Map<Integer, List<PartitionSplit>> assigned = new LinkedHashMap<>();
        assigned.put(0, Arrays.asList(a));
        assigned.put(1, Arrays.asList(b));
        write(dir, "enum-v0", EnumStateWriter.v0(assigned));
        write(dir, "file-split", FileSplitCases.atPosition(-1L, 154L));
        write(dir, "file-split-moved", FileSplitCases.atPosition(-1L, 600L));
        write(dir, "file-split-hosts", FileSplitCases.onHosts());
    }

    private static PartitionSplit split(String topic, int partition, long start, long stop) {
        return new PartitionSplit(new TopicPartition(topic, partition), start, stop);
    }

    private static void write(Path dir, String name, byte[] data) throws IOException {
        Files.write(dir.resolve(name + ".bin"), data);
    }
}
