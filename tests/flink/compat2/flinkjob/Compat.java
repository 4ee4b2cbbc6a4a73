package flinkjob;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.StateTtlConfig;
import java.time.Duration;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.legacy.RichParallelSourceFunction;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;

/** The Flink 2.x side of the API differences; compat1 has the 1.x side. */
final class Compat {
    private Compat() {}

    static final String KEY_BACKEND = "state.backend.type";
    static final String KEY_STORAGE = "execution.checkpointing.storage";
    static final String KEY_INLINE_THRESHOLD = "execution.checkpointing.data-inline-threshold";
    static final String KEY_CHECKPOINT_DIR = "execution.checkpointing.dir";
    static final String KEY_RETAINED = "execution.checkpointing.num-retained";
    static final String KEY_INCREMENTAL = "execution.checkpointing.incremental";
    static final String KEY_RESTORE_PATH = "execution.state-recovery.path";
    static final String KEY_IGNORE_UNCLAIMED = "execution.state-recovery.ignore-unclaimed-state";

    static StateTtlConfig.Builder ttlBuilder(long ms) {
        return StateTtlConfig.newBuilder(Duration.ofMillis(ms));
    }

    static TumblingEventTimeWindows tumbling(long ms) {
        return TumblingEventTimeWindows.of(Duration.ofMillis(ms));
    }

    @SuppressWarnings("deprecation")
    static int subtask(RuntimeContext rc) {
        return rc.getTaskInfo().getIndexOfThisSubtask();
    }

    static <T> DataStreamSource<T> source(StreamExecutionEnvironment env, SourceBody<T> body, TypeInformation<T> ti, String name) {
        return env.addSource(new Src<>(body), name, ti);
    }

    static <T> org.apache.flink.api.common.typeutils.TypeSerializer<T> serializer(TypeInformation<T> ti, org.apache.flink.api.common.ExecutionConfig ec) {
        return ti.createSerializer(ec.getSerializerConfig());
    }

    static <T> void discard(DataStream<T> s, String uid) {
        s.sinkTo(new DiscardingSink<T>()).uid(uid).name(uid);
    }

    static String sinkOperatorName(String uid) {
        return uid + ": Writer";
    }

    static final class Src<T> extends RichParallelSourceFunction<T> implements CheckpointedFunction, CheckpointListener {
        private final SourceBody<T> body;

        Src(SourceBody<T> body) {
            this.body = body;
        }

        @Override
        public void run(SourceContext<T> ctx) throws Exception {
            body.run(new SourceBody.Emitter<T>() {
                public void collect(T v, long ts) { ctx.collectWithTimestamp(v, ts); }
                public void watermark(long ts) { ctx.emitWatermark(new Watermark(ts)); }
                public Object lock() { return ctx.getCheckpointLock(); }
            });
        }

        @Override
        public void cancel() {
            body.cancel();
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            body.snapshotState(ctx);
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            body.initializeState(ctx, subtask(getRuntimeContext()));
        }

        @Override
        public void notifyCheckpointComplete(long id) {
            body.checkpointComplete(id);
        }
    }
}
