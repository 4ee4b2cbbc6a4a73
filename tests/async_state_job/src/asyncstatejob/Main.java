package asyncstatejob;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.legacy.RichParallelSourceFunction;
import org.apache.flink.util.Collector;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A job on ForSt with the asynchronous state API (Flink 2.x: {@code enableAsyncState()}, state
 * v2), which can take native savepoints only, for the test that statectl's native output of such a
 * savepoint is what the job restores. Operator "proc" keys events by "k-NN" (KEYS keys, key i
 * sent i % 5 + 1 times) and keeps per key an async ValueState<Long> "count" (events seen), an
 * async MapState<String, Long> "by-parity" ("even"/"odd" event numbers) and an async
 * ListState<String> "seen" (each event's number, in order).
 *
 * <pre>
 *   save OUT_DIR                     run the events, take a NATIVE savepoint, write its path to
 *                                    OUT_DIR/savepoint.txt, cancel
 *   restore SAVEPOINT MAXP OUT_DIR   restore at max parallelism MAXP (all state claimed), read each
 *                                    key's state asynchronously, write "key count even odd seen" lines
 *                                    to OUT_DIR/restored.txt
 * </pre>
 */
public final class Main {
    static final int KEYS = 40;
    static final AtomicInteger DONE = new AtomicInteger();
    static final Map<String, String> RESTORED = new ConcurrentSkipListMap<>();

    private Main() {}

    public static void main(String[] args) throws Exception {
        boolean save = args[0].equals("save");
        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "none");
        conf.setString("state.backend.type", "forst");
        if (!save) {
            conf.setString("execution.state-recovery.path", args[1]);
            conf.setString("execution.state-recovery.ignore-unclaimed-state", "false");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        env.setMaxParallelism(save ? 128 : Integer.parseInt(args[2]));
        env.addSource(new Events(save)).uid("src")
                .keyBy(e -> e.split(" ")[0])
                .enableAsyncState()
                .process(new Proc(save)).uid("proc")
                .sinkTo(new DiscardingSink<>()).uid("sink");
        if (save) {
            JobClient client = env.executeAsync("async state save");
            while (DONE.get() < 2) Thread.sleep(10);
            String path = null;
            for (int attempt = 0; path == null; attempt++) {
                try {
                    path = client.triggerSavepoint(Paths.get(args[1], "savepoints").toUri().toString(),
                            SavepointFormatType.NATIVE).get();
                } catch (java.util.concurrent.ExecutionException e) {
                    if (attempt >= 100) throw e;
                    Thread.sleep(100);
                }
            }
            client.cancel().get();
            Files.write(Paths.get(args[1], "savepoint.txt"), path.getBytes(StandardCharsets.UTF_8));
        } else {
            env.execute("async state restore");
            StringBuilder b = new StringBuilder();
            for (Map.Entry<String, String> e : RESTORED.entrySet()) {
                b.append(e.getKey()).append(' ').append(e.getValue()).append('\n');
            }
            Files.write(Paths.get(args[3], "restored.txt"), b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Saving: "k-NN n" for each event n of each key; restoring: one "k-NN -1" probe per key. */
    static final class Events extends RichParallelSourceFunction<String> {
        private final boolean save;
        private volatile boolean running = true;

        Events(boolean save) {
            this.save = save;
        }

        @Override
        public void run(SourceContext<String> ctx) {
            int me = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            for (int i = me; i < KEYS; i += 2) {
                String key = String.format("k-%02d", i);
                int events = save ? i % 5 + 1 : 1;
                for (int n = 0; n < events; n++) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.collect(key + " " + (save ? n : -1));
                    }
                }
            }
            if (!save) return;
            DONE.incrementAndGet();
            while (running) {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    static final class Proc extends KeyedProcessFunction<String, String, String> {
        private final boolean save;
        private transient ValueState<Long> count;
        private transient MapState<String, Long> byParity;
        private transient ListState<String> seen;

        Proc(boolean save) {
            this.save = save;
        }

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            byParity = getRuntimeContext().getMapState(new MapStateDescriptor<>("by-parity", Types.STRING, Types.LONG));
            seen = getRuntimeContext().getListState(new ListStateDescriptor<>("seen", Types.STRING));
        }

        @Override
        public void processElement(String event, Context ctx, Collector<String> out) {
            String key = ctx.getCurrentKey();
            int n = Integer.parseInt(event.split(" ")[1]);
            if (save) {
                String parity = n % 2 == 0 ? "even" : "odd";
                count.asyncValue().thenCompose(c -> count.asyncUpdate(c == null ? 1L : c + 1))
                        .thenCompose(v -> byParity.asyncGet(parity))
                        .thenCompose(p -> byParity.asyncPut(parity, p == null ? 1L : p + 1))
                        .thenAccept(done -> seen.asyncAdd(String.valueOf(n)));
            } else {
                List<String> elements = Collections.synchronizedList(new ArrayList<>());
                count.asyncValue().thenCombine(byParity.asyncGet("even"), (c, e) -> c + " " + e)
                        .thenCombine(byParity.asyncGet("odd"), (ce, o) -> ce + " " + o)
                        .thenCompose(line -> seen.asyncGet()
                                .thenCompose(it -> it.onNext(v -> { elements.add(v); }))
                                .thenApply(done -> line + " " + String.join(",", elements)))
                        .thenAccept(line -> RESTORED.put(key, line));
            }
        }
    }
}
