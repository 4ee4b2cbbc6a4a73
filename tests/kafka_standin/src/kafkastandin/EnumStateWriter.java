package kafkastandin;

import org.apache.flink.connector.base.source.utils.SerdeUtils;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/** Writes a KafkaSource enumerator checkpoint in each of the layouts its serializer has had
 * (versions 0 to 3). A status is 0 (assigned) or 1 (unassigned). */
final class EnumStateWriter {
    private static final SplitSerializer SPLITS = new SplitSerializer();

    private EnumStateWriter() {}

    /** Version 3: int n, int split version, n x (int length, split, int status), bool. */
    static byte[] v3(List<PartitionSplit> splits, int[] status, boolean discovered) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(splits.size());
        out.writeInt(SPLITS.getVersion());
        for (int i = 0; i < splits.size(); i++) {
            byte[] split = SPLITS.serialize(splits.get(i));
            out.writeInt(split.length);
            out.write(split);
            out.writeInt(status[i]);
        }
        out.writeBoolean(discovered);
        out.flush();
        return bytes.toByteArray();
    }

    /** Version 2: int n, n x (UTF topic, int partition, int status), bool. */
    static byte[] v2(List<PartitionSplit> splits, int[] status, boolean discovered) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(splits.size());
        for (int i = 0; i < splits.size(); i++) {
            out.writeUTF(splits.get(i).tp.topic);
            out.writeInt(splits.get(i).tp.partition);
            out.writeInt(status[i]);
        }
        out.writeBoolean(discovered);
        out.flush();
        return bytes.toByteArray();
    }

    /** Version 1: int n, n x (UTF topic, int partition). */
    static byte[] v1(List<PartitionSplit> splits) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(splits.size());
        for (PartitionSplit s : splits) {
            out.writeUTF(s.tp.topic);
            out.writeInt(s.tp.partition);
        }
        out.flush();
        return bytes.toByteArray();
    }

    /** Version 0: the split assignments per subtask, written by Flink's own connector-base SerdeUtils. */
    static byte[] v0(Map<Integer, List<PartitionSplit>> assignments) throws IOException {
        return SerdeUtils.serializeSplitAssignments(assignments, SPLITS);
    }
}
