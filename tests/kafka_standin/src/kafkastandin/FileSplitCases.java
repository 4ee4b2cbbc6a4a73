package kafkastandin;

import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.FileSourceSplitSerializer;
import org.apache.flink.connector.file.src.util.CheckpointedPosition;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.io.SimpleVersionedSerialization;

import java.io.IOException;

/** FileSource splits written by Flink's own FileSourceSplitSerializer (it ships in Flink's
 * jars), framed as a SourceReaderState element: a reader position moved on, hostnames, a
 * path with a host, port and query, a split not yet started. */
final class FileSplitCases {
    private FileSplitCases() {}

    static byte[] atPosition(long offset, long recordsAfterOffset) throws IOException {
        return write(new FileSourceSplit("0000000007", new Path("file:/data/in/invoices-\u00fc.txt"), 0L, 73725L,
                1795795552558L, 73725L, new String[0], new CheckpointedPosition(offset, recordsAfterOffset)));
    }

    static byte[] onHosts() throws IOException {
        return write(new FileSourceSplit("11", new Path("hdfs://namenode:8020/logs/part-0?v=2"), 128L, 4096L,
                1700000000000L, 8192L, "host-a", "host-b"));
    }

    private static byte[] write(FileSourceSplit split) throws IOException {
        return SimpleVersionedSerialization.writeVersionAndSerialize(new FileSourceSplitSerializer(), split);
    }
}
