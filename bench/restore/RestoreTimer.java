import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * Restores a savepoint holding one keyed operator "proc" (String keys, ValueState<Long> "count",
 * ListState<String> "events") into Flink's RocksDB backend and ends: a job of one element, so
 * its time is the JVM, the MiniCluster and the restore. Arguments: savepoint, parallelism.
 * Prints the restored count of the one key it reads ("user-0").
 */
public class RestoreTimer {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", "rocksdb");
        conf.setString("execution.state-recovery.path", args[0]);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(Integer.parseInt(args[1]));
        env.fromSequence(0, 0)
                .keyBy(i -> "user-" + i)
                .process(new Proc()).uid("proc").setMaxParallelism(128)
                .sinkTo(new DiscardingSink<>());
        env.execute("restore-timer");
        System.out.println("restored");
    }

    static class Proc extends KeyedProcessFunction<String, Long, Long> {
        private transient ValueState<Long> count;
        private transient ListState<String> events;

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
            events = getRuntimeContext().getListState(new ListStateDescriptor<>("events", String.class));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            Long n = count.value();
            if (n == null) {
                throw new IllegalStateException("key user-0 has no restored count");
            }
            System.out.println("user-0 count " + n);
            out.collect(n);
        }
    }
}
