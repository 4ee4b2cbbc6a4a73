package flinkjob;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The suite's Flink job. Arguments: knobs as name=value; several runs in one process are separated
 * by "--next". Modes: savepoint, checkpoint, restore, size, declared, sql, sql-size, sql-restore (see tests/flink/README.md).
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        List<Map<String, String>> runs = new ArrayList<>();
        Map<String, String> cur = new LinkedHashMap<>();
        for (String a : args) {
            if (a.equals("--next")) {
                runs.add(cur);
                cur = new LinkedHashMap<>();
                continue;
            }
            int eq = a.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("expected name=value, got " + a);
            cur.put(a.substring(0, eq), a.substring(eq + 1));
        }
        runs.add(cur);
        try {
            for (Map<String, String> knobs : runs) {
                Shared.reset();
                Scenario sc = new Scenario(knobs);
                if (sc.mode.equals("declared")) Declared.run(sc);
                else if (sc.mode.equals("sql")) SqlJob.run(sc);
                else if (sc.mode.equals("sql-size")) SqlSize.run(sc);
                else if (sc.mode.equals("sql-restore")) SqlRestore.run(sc);
                // the production job uses Flink 1.19+ APIs: not compiled for 1.17 (flink_job.py), so found by name
                else if (sc.mode.equals("production")) {
                    try {
                        Class.forName("flinkjob.Production").getDeclaredMethod("run", Scenario.class).invoke(null, sc);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        if (e.getCause() instanceof Exception) throw (Exception) e.getCause();
                        throw e;
                    }
                }
                else run(sc);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    static Configuration configuration(Scenario sc) {
        Configuration conf = new Configuration();
        conf.setString(Compat.KEY_BACKEND, sc.backend);
        // A failure ends the run (with checkpointing on, Flink would otherwise restart it forever).
        conf.setString("restart-strategy.type", "none");
        if (sc.compression) conf.setString("execution.checkpointing.snapshot-compression", "true");
        if (!sc.inlineThreshold.equals("default")) conf.setString(Compat.KEY_INLINE_THRESHOLD, sc.inlineThreshold);
        // File checkpoint storage (the default keeps checkpoints on the JobManager's heap).
        conf.setString(Compat.KEY_STORAGE, "filesystem");
        conf.setString(Compat.KEY_CHECKPOINT_DIR, Paths.get(sc.out, "checkpoints").toUri().toString());
        if (!sc.checkpoint.equals("none")) {
            conf.setString("execution.checkpointing.interval", "300 ms");
            conf.setString(Compat.KEY_RETAINED, "3");
            conf.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
            conf.setString(Compat.KEY_INCREMENTAL, String.valueOf(sc.checkpoint.equals("incremental")));
        }
        if (sc.restoreFrom != null) {
            conf.setString(Compat.KEY_RESTORE_PATH, sc.restoreFrom);
            conf.setString(Compat.KEY_IGNORE_UNCLAIMED, "false");
        }
        return conf;
    }

    /** The operator names Flink stores: sources get "Source: ", the sink writer its own suffix. */
    static Map<String, String> names(Scenario sc) {
        Map<String, String> n = new LinkedHashMap<>();
        n.put("src", "Source: " + sc.uid("src"));
        n.put("rules-src", "Source: " + sc.uid("rules-src"));
        for (String r : new String[] {"union-op", "bcast", "proc", "win"}) n.put(r, sc.uid(r));
        n.put("snk", Compat.sinkOperatorName(sc.uid("snk")));
        return n;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static <K> void build(StreamExecutionEnvironment env, Scenario sc) {
        TypeInformation<K> kti = sc.keyTypeInfo();
        TypeInformation<Event> eti = TypeInformation.of(Event.class);
        DataStream<Event> events = role(Compat.source(env, new Sources.Events(sc), eti, sc.uid("src")), sc, "src");
        if (sc.mode.equals("size")) {
            events.keyBy(new Operators.EventKey<K>(sc), kti)
                    .process(new Operators.SizeProc<K>(), Types.TUPLE(kti, Types.LONG))
                    .uid(sc.uid("proc")).name(sc.uid("proc"));
            return;
        }
        DataStream<Event> counted = role(events.map(new Operators.UnionOp()), sc, "union-op").name(sc.uid("union-op"));
        TypeInformation<Tuple3<String, String, String>> rti = Types.TUPLE(Types.STRING, Types.STRING, Types.STRING);
        DataStream<Tuple3<String, String, String>> rules =
                Compat.source(env, new Sources.Rules(sc), rti, sc.uid("rules-src")).setParallelism(1).uid(sc.uid("rules-src"));
        DataStream<Event> enriched = counted.connect(rules.broadcast(Operators.RULES))
                .process(new Operators.Bcast(), eti);
        enriched = role((SingleOutputStreamOperator<Event>) enriched, sc, "bcast").name(sc.uid("bcast"));
        TypeInformation<Tuple2<K, Long>> pti = (TypeInformation) Types.TUPLE(kti, Types.LONG);
        DataStream<Tuple2<K, Long>> proc = role(enriched.keyBy(new Operators.EventKey<K>(sc), kti)
                .process(new Operators.Proc<K>(sc), pti), sc, "proc").name(sc.uid("proc"));
        DataStream<String> fired = role(proc.keyBy(new Operators.TupleKey<K>(), kti)
                .window(Compat.tumbling(Scenario.BUCKET_MS))
                .reduce(new Operators.SumF1<K>(), new Operators.WinFn<K>(sc), Types.STRING), sc, "win")
                .name(sc.uid("win"));

        Compat.discard(fired, sc.uid("snk"));
    }

    /**
     * *op* given its role's uid, unless the knob no-uid lists the role (Flink then hashes its id
     * from its place in the graph, chained outputs included); the knob chain-split's role starts a
     * new chain (its input's chain is cut before it).
     */
    static <T> SingleOutputStreamOperator<T> role(SingleOutputStreamOperator<T> op, Scenario sc, String role) {
        if (!sc.noUid.contains(role)) op.uid(sc.uid(role));
        if (role.equals(sc.chainSplit)) op.startNewChain();
        return op;
    }

    static void waitFor(JobClient client, String what, java.util.function.BooleanSupplier done) throws Exception {
        waitFor(client, what, done, 300_000);
    }

    /**
     * Waits until done, failing once the job has ended. The job's end is told by its result future,
     * never by asking the cluster its status: the MiniCluster of an executeAsync job closes itself as
     * the job ends, and a status request sent to it while it closes may never be answered.
     */
    static void waitFor(JobClient client, String what, java.util.function.BooleanSupplier done, long timeoutMs) throws Exception {
        java.util.concurrent.CompletableFuture<?> end = client.getJobExecutionResult();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (end.isDone()) {
                end.get();
                throw new IllegalStateException("the job ended before " + what);
            }
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            Thread.sleep(20);
        }
    }

    static void run(Scenario sc) throws Exception {
        long t0 = System.currentTimeMillis();
        Path out = Paths.get(sc.out);
        Files.createDirectories(out);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration(sc));
        env.setParallelism(sc.parallelism);
        env.setMaxParallelism(sc.maxParallelism);
        build(env, sc);
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        run.put("mode", sc.mode);
        run.put("state_backend", sc.backend);
        if (sc.mode.equals("restore")) {
            env.execute("flinkjob restore " + sc.uidPrefix);
            run.put("restored_from", sc.restoreFrom);
            write(out.resolve("restored.json"), restoredJson(sc, run));
            System.out.println("restored " + sc.restoreFrom + " in " + (System.currentTimeMillis() - t0) + " ms");
            return;
        }
        JobClient client = env.executeAsync("flinkjob " + sc.mode + " " + sc.uidPrefix);
        long lo = t0;
        waitFor(client, "the sources emitted everything", () -> Shared.sourcesDone.get() == sc.parallelism);
        String path;
        if (sc.checkpoint.equals("none")) {
            run.put("snapshot", "savepoint");
            run.put("savepoint_format", sc.format);
            path = savepoint(client, out.resolve("savepoints").toUri().toString(), SavepointFormatType.valueOf(sc.format));
        } else {
            run.put("snapshot", sc.checkpoint + " checkpoint");
            waitFor(client, "a checkpoint taken after the input", () -> Shared.finalCheckpoint.get() >= 0);
            long id = Shared.finalCheckpoint.get();
            run.put("checkpoint_id", id);
            path = out.resolve("checkpoints").resolve(client.getJobID().toString()).resolve("chk-" + id).toString();
        }
        long hi = System.currentTimeMillis(); // every TTL timestamp in the snapshot was read before this
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception expected) {
            // cancelled
        }
        if (path.startsWith("file:")) path = Paths.get(java.net.URI.create(path)).toString();
        run.put("compression", sc.compression);
        run.put("inline_threshold", sc.inlineThreshold);
        run.put("savepoint_path", path);
        run.put("produce_wall_clock_ms", java.util.Arrays.asList(t0, System.currentTimeMillis()));
        run.put("ttl_lo", lo);
        run.put("ttl_hi", hi);
        Map<String, Object> expected = Model.expected(sc, run, names(sc));
        expected.remove("ttl_lo");
        expected.remove("ttl_hi");
        write(out.resolve("expected.json"), expected);
        System.out.println("snapshot " + path + " in " + (System.currentTimeMillis() - t0) + " ms");
    }

    /** A savepoint of a size run's 10M keys takes minutes on a slow machine; a hung one ends the run. */
    static final long SAVEPOINT_TIMEOUT_MS = 1_200_000;

    /** Triggers a savepoint, again while some task is still being deployed (Flink refuses then). */
    static String savepoint(JobClient client, String dir, SavepointFormatType format) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                java.util.concurrent.CompletableFuture<String> path = client.triggerSavepoint(dir, format);
                waitFor(client, "the savepoint", path::isDone, SAVEPOINT_TIMEOUT_MS);
                return path.get();
            } catch (java.util.concurrent.ExecutionException e) {
                String msg = String.valueOf(e.getCause());
                if (attempt >= 100 || !msg.contains("not being executed at the moment")) throw e;
                Thread.sleep(100);
            }
        }
    }

    static void write(Path p, Object json) throws Exception {
        Files.write(p, Json.write(json).getBytes(StandardCharsets.UTF_8));
    }

    /** What the restored job read back, in expected.json's layout. */
    static Map<String, Object> restoredJson(Scenario sc, Map<String, Object> run) {
        Map<String, Object> out = new LinkedHashMap<>(run);
        out.put("parallelism", sc.parallelism);
        out.put("max_parallelism", sc.maxParallelism);
        Map<String, Map<String, Map<String, Object>>> r = Shared.restored;
        Map<String, Object> ops = new LinkedHashMap<>();
        ops.put(sc.uid("src"), Model.obj("operator_state", Model.obj("offsets", Model.obj("subtasks", Shared.sorted(get(r, "src", "offsets"))))));
        ops.put(sc.uid("union-op"), Model.obj("operator_state", Model.obj("union-counts", Model.obj("subtasks", Shared.sorted(get(r, "union-op", "union-counts"))))));
        ops.put(sc.uid("bcast"), Model.obj("broadcast_state", Model.obj("rules", Model.obj("subtasks", Shared.sorted(get(r, "bcast", "rules"))))));
        Map<String, Object> keyed = new LinkedHashMap<>();
        Map<String, Map<String, Object>> proc = r.getOrDefault("proc", new TreeMap<>());
        for (String state : new TreeMap<>(proc).keySet()) keyed.put(state, Model.obj("values", Shared.sorted(proc.get(state))));
        Map<String, Object> timers = new TreeMap<>();
        for (Map.Entry<String, List<Long>> e : Shared.firedTimers.entrySet()) {
            List<Long> l = new ArrayList<>(e.getValue());
            java.util.Collections.sort(l);
            timers.put(e.getKey(), l);
        }
        ops.put(sc.uid("proc"), Model.obj("keyed_state", keyed, "timers", Model.obj("event_time", Model.obj("values", timers))));
        List<Object[]> fired = new ArrayList<>(Shared.firedWindows);
        fired.sort((a, b) -> {
            int c = ((String) a[0]).compareTo((String) b[0]);
            return c != 0 ? c : Long.compare((Long) a[1], (Long) b[1]);
        });
        List<Object> contents = new ArrayList<>(), wtimers = new ArrayList<>();
        for (Object[] f : fired) {
            List<Object> window = java.util.Arrays.asList(f[1], f[2]);
            contents.add(Model.obj("key", f[0], "window", window, "value", java.util.Arrays.asList(f[3], f[4])));
            wtimers.add(Model.obj("key", f[0], "timestamp", (Long) f[2] - 1, "window", window));
        }
        ops.put(sc.uid("win"), Model.obj("keyed_state", Model.obj("window-contents", Model.obj("values", contents)),
                "timers", Model.obj("event_time", Model.obj("values", wtimers))));
        out.put("operators", ops);
        return out;
    }

    static Map<String, Object> get(Map<String, Map<String, Map<String, Object>>> r, String role, String state) {
        Map<String, Map<String, Object>> m = r.get(role);
        return m == null ? null : m.get(state);
    }
}
