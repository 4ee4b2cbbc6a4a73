package legacyoffsetsjob;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.legacy.RichParallelSourceFunction;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A source keeping its offsets as the legacy FlinkKafkaConsumer does (a UNION list state
 * "topic-partition-offset-states" of Tuple2 of a Kryo-serialized partition and a Long, the
 * serializer built as FlinkKafkaConsumerBase.createStateSerializer builds it), at parallelism 2
 * over PARTITIONS partitions (partition p on subtask p % 2), for the test that offsets moved by
 * `statectl bootstrap --base` are where the restored job resumes.
 *
 * <pre>
 *   save OUT_DIR                 emit OFFSETS[p] records of each partition, take a canonical savepoint,
 *                                write its path to OUT_DIR/savepoint.txt, cancel
 *   restore SAVEPOINT OUT_DIR    restore (all state claimed); each subtask keeps its partitions'
 *                                offsets from the union state, as the consumer does; write
 *                                "topic partition offset" lines to OUT_DIR/restored.txt
 * </pre>
 */
public final class Main {
    static final String TOPIC = "payments.events";
    static final long[] OFFSETS = {120, 7, 3000000000L, 0};
    static final AtomicInteger DONE = new AtomicInteger();
    static final Map<Integer, Long> RESTORED = new ConcurrentSkipListMap<>();

    private Main() {}

    /** The partition, as the connector's KafkaTopicPartition: a final class Kryo writes field by field. */
    public static final class TopicPartition {
        private final String topic;
        private final int partition;
        private final int cachedHash;

        public TopicPartition(String topic, int partition) {
            this.topic = topic;
            this.partition = partition;
            this.cachedHash = 31 * topic.hashCode() + partition;
        }
    }

    public static void main(String[] args) throws Exception {
        boolean save = args[0].equals("save");
        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "none");
        if (!save) {
            conf.setString("execution.state-recovery.path", args[1]);
            conf.setString("execution.state-recovery.ignore-unclaimed-state", "false");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        env.addSource(new Offsets(save), "legacy-offsets", Types.LONG).uid("legacy-offsets")
                .sinkTo(new DiscardingSink<>()).uid("sink");
        if (save) {
            JobClient client = env.executeAsync("legacy offsets save");
            while (DONE.get() < 2) Thread.sleep(10);
            String path = null;
            for (int attempt = 0; path == null; attempt++) {
                try {
                    path = client.triggerSavepoint(Paths.get(args[1], "savepoints").toUri().toString(),
                            SavepointFormatType.CANONICAL).get();
                } catch (java.util.concurrent.ExecutionException e) {
                    if (attempt >= 100) throw e;
                    Thread.sleep(100);
                }
            }
            client.cancel().get();
            Files.write(Paths.get(args[1], "savepoint.txt"), path.getBytes(StandardCharsets.UTF_8));
        } else {
            env.execute("legacy offsets restore");
            StringBuilder b = new StringBuilder();
            for (Map.Entry<Integer, Long> e : RESTORED.entrySet()) {
                b.append(TOPIC).append(' ').append(e.getKey()).append(' ').append(e.getValue()).append('\n');
            }
            Files.write(Paths.get(args[2], "restored.txt"), b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    static final class Offsets extends RichParallelSourceFunction<Long> implements CheckpointedFunction {
        private final boolean save;
        private transient ListState<Tuple2<TopicPartition, Long>> state;
        private transient Map<Integer, Long> offsets;
        private volatile boolean running = true;

        Offsets(boolean save) {
            this.save = save;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        static TypeSerializer<Tuple2<TopicPartition, Long>> stateSerializer() {
            ExecutionConfig ec = new ExecutionConfig();
            TypeSerializer<?>[] fields = {new KryoSerializer<>(TopicPartition.class, ec.getSerializerConfig()), LongSerializer.INSTANCE};
            return new TupleSerializer<>((Class<Tuple2<TopicPartition, Long>>) (Class) Tuple2.class, fields);
        }

        private int subtask() {
            return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            offsets = new TreeMap<>();
            state = ctx.getOperatorStateStore().getUnionListState(
                    new ListStateDescriptor<>("topic-partition-offset-states", stateSerializer()));
            if (ctx.isRestored()) {
                int me = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                for (Tuple2<TopicPartition, Long> e : state.get()) {
                    if (!e.f0.topic.equals(TOPIC) || e.f0.cachedHash != 31 * TOPIC.hashCode() + e.f0.partition) {
                        throw new IllegalStateException("a restored partition is not what was written: " + e.f0.topic);
                    }
                    if (e.f0.partition % 2 == me) RESTORED.put(e.f0.partition, e.f1);
                }
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            List<Tuple2<TopicPartition, Long>> l = new ArrayList<>();
            synchronized (offsets) {
                for (Map.Entry<Integer, Long> e : offsets.entrySet()) l.add(Tuple2.of(new TopicPartition(TOPIC, e.getKey()), e.getValue()));
            }
            state.update(l);
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            if (!save) return;
            int me = subtask();
            synchronized (ctx.getCheckpointLock()) {
                for (int p = me; p < OFFSETS.length; p += 2) {
                    ctx.collect(OFFSETS[p]);
                    synchronized (offsets) {
                        offsets.put(p, OFFSETS[p]);
                    }
                }
            }
            DONE.incrementAndGet();
            while (running) Thread.sleep(20);
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
