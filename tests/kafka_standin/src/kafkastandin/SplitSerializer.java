package kafkastandin;

import org.apache.flink.core.io.SimpleVersionedSerializer;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/** Writes a split in the KafkaSource split layout (version 0): UTF topic, int partition,
 * long starting offset, long stopping offset. Only writing is needed here. */
public final class SplitSerializer implements SimpleVersionedSerializer<PartitionSplit> {
    @Override
    public int getVersion() {
        return 0;
    }

    @Override
    public byte[] serialize(PartitionSplit s) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeUTF(s.tp.topic);
        out.writeInt(s.tp.partition);
        out.writeLong(s.startingOffset);
        out.writeLong(s.stoppingOffset);
        out.flush();
        return bytes.toByteArray();
    }

    @Override
    public PartitionSplit deserialize(int version, byte[] serialized) {
        throw new UnsupportedOperationException("the stand-in only writes");
    }
}
