package flinkjob;

import java.io.Serializable;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;

/** A source's logic, independent of the SourceFunction class, whose package differs between Flink 1.x and 2.x. */
public interface SourceBody<T> extends Serializable {
    interface Emitter<T> {
        void collect(T value, long timestamp);
        void watermark(long timestamp);
        Object lock();
    }

    void initializeState(FunctionInitializationContext ctx, int subtask) throws Exception;

    void snapshotState(FunctionSnapshotContext ctx) throws Exception;

    void run(Emitter<T> out) throws Exception;

    void cancel();

    default void checkpointComplete(long checkpointId) {}
}
