package upgradejob;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A keyed job in two versions (tests/upgrade_job/v1 and v2 hold each version's States and
 * Account; flink1 and flink2 the source, on each release's legacy source API), for the tests that `statectl remap` lets the new version restore the old one's state.
 * The keyed function (uid "acct", parallelism 2) keeps the states States declares.
 *
 * <pre>
 *   save OUT_DIR                 process one record (key, n) per key of KEYS, take a canonical
 *                                savepoint, write its path to OUT_DIR/savepoint.txt, cancel
 *   new OUT_DIR                  the same with one record of key "fresh" (NEW: every state registered)
 *   restore SAVEPOINT OUT_DIR    restore (all state claimed); one probe per key of KEYS: each key's
 *                                states as States.dump writes them, to OUT_DIR/restored.txt
 * </pre>
 * BACKEND (the fourth argument, default hashmap) is the state backend.
 */
public final class Main {
    static final String[] KEYS = {"k0", "k1", "k2", "k3", "k4", "k5"};
    static final AtomicInteger PROCESSED = new AtomicInteger();
    static final Map<String, String> DUMP = new ConcurrentSkipListMap<>();

    private Main() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        boolean restore = mode.equals("restore");
        String out = restore ? args[2] : args[1];
        String backend = args.length > (restore ? 3 : 2) ? args[restore ? 3 : 2] : "hashmap";
        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "none");
        conf.setString("state.backend.type", backend);
        if (restore) {
            conf.setString("execution.state-recovery.path", args[1]);
            conf.setString("execution.savepoint.path", args[1]);  // Flink 1.x's name of it
            conf.setString("execution.state-recovery.ignore-unclaimed-state", "false");
            conf.setString("execution.savepoint.ignore-unclaimed-state", "false");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        env.setMaxParallelism(128);
        List<Tuple2<String, Integer>> records = new ArrayList<>();
        if (mode.equals("new")) {
            records.add(Tuple2.of("fresh", 1));
        } else {
            for (int i = 0; i < KEYS.length; i++) records.add(Tuple2.of(KEYS[i], restore ? -1 : i + 1));
        }
        env.addSource(new Records(records, !restore), "records", Types.TUPLE(Types.STRING, Types.INT)).uid("records")
                .keyBy(r -> r.f0, Types.STRING).process(new Fn(), Types.STRING).uid("acct").name("acct")
                .sinkTo(new DiscardingSink<>()).uid("sink");
        if (restore) {
            env.execute("upgrade job restore");
            StringBuilder b = new StringBuilder();
            for (Map.Entry<String, String> e : DUMP.entrySet()) b.append(e.getKey()).append(' ').append(e.getValue()).append('\n');
            Files.write(Paths.get(out, "restored.txt"), b.toString().getBytes(StandardCharsets.UTF_8));
            return;
        }
        JobClient client = env.executeAsync("upgrade job " + mode);
        while (PROCESSED.get() < records.size()) Thread.sleep(10);
        String path = null;
        for (int attempt = 0; path == null; attempt++) {
            try {
                path = client.triggerSavepoint(Paths.get(out, "savepoints").toUri().toString(), SavepointFormatType.CANONICAL).get();
            } catch (java.util.concurrent.ExecutionException e) {
                if (attempt >= 100) throw e;
                Thread.sleep(100);
            }
        }
        client.cancel().get();
        Files.write(Paths.get(out, "savepoint.txt"), path.getBytes(StandardCharsets.UTF_8));
    }

    /** A record of n >= 0 updates its key's states; a probe (n = -1) dumps them. */
    static final class Fn extends KeyedProcessFunction<String, Tuple2<String, Integer>, String> {
        private transient States states;

        @Override
        public void open(OpenContext ctx) {
            states = new States(getRuntimeContext());
        }

        @Override
        public void processElement(Tuple2<String, Integer> r, Context ctx, Collector<String> out) throws Exception {
            if (r.f1 < 0) {
                DUMP.put(r.f0, states.dump());
            } else {
                states.update(r.f0, r.f1);
                PROCESSED.incrementAndGet();
            }
        }
    }
}
