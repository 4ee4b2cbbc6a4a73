import java.util.Iterator;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

/**
 * Flink's State Processor API reading the size job's operator (String keys, a ValueState<Long>
 * "count" and a ListState<String> "events") and aggregating it as bench_vs_spa.py's statectl
 * query does: keys, the sum of count, the number of list elements. Runs on a local MiniCluster
 * in batch mode and prints "keys sum elements".
 *
 *   java -cp classes:flink-2.3/lib/*:flink-state-processor-api-2.3.0.jar SpaAggregate SAVEPOINT UID
 */
public final class SpaAggregate {

    /** One row per key: (1, count, list size). */
    public static final class Reader extends KeyedStateReaderFunction<String, long[]> {
        private transient ValueState<Long> count;
        private transient ListState<String> events;

        public void open(OpenContext context) throws Exception {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            events = getRuntimeContext().getListState(new ListStateDescriptor<>("events", Types.STRING));
        }

        @Override
        public void readKey(String key, Context ctx, Collector<long[]> out) throws Exception {
            long n = 0;
            for (Iterator<String> it = events.get().iterator(); it.hasNext(); it.next()) {
                n++;
            }
            Long c = count.value();
            out.collect(new long[] {1, c == null ? 0 : c, n});
        }
    }

    /** Every row into one group. */
    public static final class One implements KeySelector<long[], Integer> {
        @Override
        public Integer getKey(long[] row) {
            return 0;
        }
    }

    public static final class Sum implements ReduceFunction<long[]> {
        @Override
        public long[] reduce(long[] a, long[] b) {
            return new long[] {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
        }
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        SavepointReader savepoint = SavepointReader.read(env, args[0]);
        try (CloseableIterator<long[]> result = savepoint
                .readKeyedState(OperatorIdentifier.forUid(args[1]), new Reader())
                .keyBy(new One())
                .reduce(new Sum())
                .executeAndCollect()) {
            long[] total = result.hasNext() ? result.next() : new long[3];
            System.out.println(total[0] + " " + total[1] + " " + total[2]);
        }
    }
}
