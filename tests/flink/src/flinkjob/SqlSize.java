package flinkjob;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamGraphHasherV2;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

/**
 * mode=sql-size (benchmarks): one Flink SQL GROUP BY over many keys,
 * {@code SELECT k, COUNT(*), SUM(v), MAX(name) FROM src GROUP BY k}, whose GroupAggregate keeps
 * one accumulator row per key ({@code accState} ROW<BIGINT, BIGINT, STRING>). The input is a rule
 * of the key index, so expected.json holds the rule and totals instead of per-key values. See
 * tests/flink/README.md, "SQL size mode".
 */
public final class SqlSize {
    private SqlSize() {}

    static final String STATEMENT =
            "SELECT k, COUNT(*) AS cnt, SUM(v) AS total, MAX(name) AS top_name FROM src GROUP BY k";
    /** How long the sources may take to emit everything (a million keys on a busy machine). */
    static final long EMIT_TIMEOUT_MS = 1_500_000L;

    /** Rows of key index i: two for every 4th key, one otherwise. */
    static int rowsOf(int i) {
        return i % 4 == 0 ? 2 : 1;
    }

    /** The key of index i: INT i*7+3, or BIGINT i*1000003+7 (key-type=long: uses the upper bytes). */
    static Object key(String keyType, int i) {
        return keyType.equals("long") ? (Object) (i * 1_000_003L + 7) : (Object) (i * 7 + 3);
    }

    static long v(int i, int j) {
        return 3L * i + j + 1;
    }

    static String name(int i, int j) {
        return SqlInput.NAMES[(i + 2 * j) % SqlInput.NAMES.length];
    }

    static TypeInformation<Row> rowType(String keyType) {
        return Types.ROW_NAMED(new String[] {"k", "name", "v"},
                keyType.equals("long") ? Types.LONG : Types.INT, Types.STRING, Types.LONG);
    }

    /** What the sink received: changelog rows, and the signed sums of cnt and total (+I/+U add, -U/-D subtract). */
    static final LongAdder RECEIVED = new LongAdder(), CNT = new LongAdder(), TOTAL = new LongAdder();

    public static final class Count implements MapFunction<Row, String> {
        @Override
        public String map(Row row) {
            long sign = row.getKind() == RowKind.INSERT || row.getKind() == RowKind.UPDATE_AFTER ? 1 : -1;
            RECEIVED.increment();
            CNT.add(sign * ((Number) row.getField(1)).longValue());
            TOTAL.add(sign * ((Number) row.getField(2)).longValue());
            return "";
        }
    }

    /** Key indexes i with i % parallelism == subtask, each key's rows in a row, then idles. */
    public static final class Source implements SourceBody<Row> {
        private final int numKeys, parallelism;
        private final String keyType;
        private transient int subtask;
        private volatile boolean running = true;

        Source(int numKeys, int parallelism, String keyType) {
            this.numKeys = numKeys;
            this.parallelism = parallelism;
            this.keyType = keyType;
        }

        @Override
        public void initializeState(org.apache.flink.runtime.state.FunctionInitializationContext ctx, int subtask) {
            this.subtask = subtask;
        }

        @Override
        public void snapshotState(org.apache.flink.runtime.state.FunctionSnapshotContext ctx) {}

        @Override
        public void run(Emitter<Row> out) throws Exception {
            int i = subtask;
            while (running && i < numKeys) {
                synchronized (out.lock()) {  // a thousand keys per hold of the checkpoint lock
                    for (int n = 0; n < 1000 && i < numKeys; n++, i += parallelism) {
                        for (int j = 0; j < rowsOf(i); j++) out.collect(Row.of(key(keyType, i), name(i, j), v(i, j)), 0L);
                    }
                }
            }
            Shared.sourcesDone.incrementAndGet();
            while (running) Sources.sleep();
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    static void run(Scenario sc) throws Exception {
        if (!sc.checkpoint.equals("none")) throw new IllegalArgumentException("mode=sql-size makes savepoints only");
        if (!sc.keyType.equals("int") && !sc.keyType.equals("long")) {
            throw new IllegalArgumentException("mode=sql-size: key-type must be int or long, got " + sc.keyType);
        }
        long t0 = System.currentTimeMillis();
        Path out = Paths.get(sc.out);
        Files.createDirectories(out);
        RECEIVED.reset();
        CNT.reset();
        TOTAL.reset();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Main.configuration(sc));
        env.setParallelism(sc.parallelism);
        env.setMaxParallelism(sc.maxParallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().setLocalTimeZone(ZoneOffset.UTC);
        SqlJob.resetPlannerIds(tEnv);
        DataStream<Row> src = Compat.source(env, new Source(sc.numKeys, sc.parallelism, sc.keyType), rowType(sc.keyType), "sql-src")
                .uid("sql-src");
        tEnv.createTemporaryView("src", tEnv.fromDataStream(src));
        Table t = tEnv.sqlQuery(STATEMENT);
        List<String> columns = t.getResolvedSchema().getColumnNames();
        DataStream<String> counted = tEnv.toChangelogStream(t).map(new Count()).uid("sql-count").name("sql-count");
        Compat.discard(counted, "sql-sink");

        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("flinkjob sql-size");
        Map<Integer, byte[]> hashes = new StreamGraphHasherV2().traverseStreamGraphAndGenerateHashes(graph);
        Map<String, Object> agg = null;
        List<Object> nodes = new ArrayList<>();
        for (StreamNode n : graph.getStreamNodes()) {
            Map<String, Object> node = Model.obj("node_id", n.getId(), "name", n.getOperatorName(),
                    "description", n.getOperatorDescription(), "uid", n.getTransformationUID(),
                    "operator_id", SqlJob.hex(hashes.get(n.getId())), "parallelism", n.getParallelism());
            nodes.add(node);
            if (n.getOperatorName().startsWith("GroupAggregate[")) {
                if (agg != null) throw new IllegalStateException("two GroupAggregate operators");
                List<Object> keyTypes = new ArrayList<>();
                for (Object ks : n.getStatePartitioners()) {
                    keyTypes.add(ks instanceof org.apache.flink.table.runtime.keyselector.RowDataKeySelector
                            ? ((org.apache.flink.table.runtime.keyselector.RowDataKeySelector) ks).getProducedType().toString()
                            : String.valueOf(ks));
                }
                agg = new LinkedHashMap<>(node);
                agg.put("max_parallelism", sc.maxParallelism);
                agg.put("key_types", keyTypes);
            }
        }
        if (agg == null) throw new IllegalStateException("the plan has no GroupAggregate operator");
        nodes.sort((a, b) -> Integer.compare((Integer) ((Map<?, ?>) a).get("node_id"), (Integer) ((Map<?, ?>) b).get("node_id")));

        JobClient client = env.executeAsync(graph);
        Main.waitFor(client, "the sources emitted everything", () -> Shared.sourcesDone.get() == sc.parallelism, EMIT_TIMEOUT_MS);
        long emitted = System.currentTimeMillis();
        String path = Main.savepoint(client, out.resolve("savepoints").toUri().toString(), SavepointFormatType.valueOf(sc.format));
        long saved = System.currentTimeMillis();
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception expected) {
            // cancelled
        }
        if (path.startsWith("file:")) path = Paths.get(java.net.URI.create(path)).toString();

        // The model: totals over every key (rowsOf, v, name are the whole input).
        long rows = 0, vSum = 0, keySum = 0, nameChars = 0, epsilonKeys = 0;
        for (int i = 0; i < sc.numKeys; i++) {
            keySum += ((Number) key(sc.keyType, i)).longValue();
            String max = null;
            for (int j = 0; j < rowsOf(i); j++) {
                rows++;
                vSum += v(i, j);
                String nm = name(i, j);
                if (max == null || nm.compareTo(max) > 0) max = nm;
            }
            nameChars += max.length();
            if (max.equals(SqlInput.NAMES[4])) epsilonKeys++;
        }
        long changelog = sc.numKeys + 2 * (rows - sc.numKeys);  // +I per key, then -U/+U per further row
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        expected.put("mode", "sql-size");
        expected.put("snapshot", "savepoint");
        expected.put("savepoint_format", sc.format);
        expected.put("state_backend", sc.backend);
        expected.put("compression", sc.compression);
        expected.put("inline_threshold", sc.inlineThreshold);
        expected.put("savepoint_path", path);
        expected.put("parallelism", sc.parallelism);
        expected.put("max_parallelism", sc.maxParallelism);
        expected.put("produce_wall_clock_ms", Arrays.asList(t0, System.currentTimeMillis()));
        expected.put("phases_ms", Model.obj("emitted", emitted - t0, "savepoint", saved - emitted));
        expected.put("scenario", Model.obj("knobs", new TreeMap<>(sc.knobs)));
        expected.put("statement", Model.obj("sql", STATEMENT, "columns", columns));
        expected.put("operator", agg);
        String keyCol = sc.keyType.equals("long") ? "BIGINT" : "INT";
        expected.put("size", Model.obj(
                "keys", (long) sc.numKeys,
                "rule", Model.obj(
                        "key", sc.keyType.equals("long") ? "k = i * 1000003 + 7 (BIGINT), key index 0 <= i < keys"
                                : "k = i * 7 + 3 (INT), key index 0 <= i < keys",
                        "rows", "2 rows for i % 4 == 0, else 1; row j (0, 1) of key i: v = 3i + j + 1, name = NAMES[(i + 2j) % 5]",
                        "names", Arrays.asList(SqlInput.NAMES)),
                "key_type", "ROW<f0 " + keyCol + ">",
                "acc_state", "ROW<f0 BIGINT count1 = COUNT(*), f1 BIGINT sum = SUM(v), f2 STRING max = MAX(name)>",
                "rows", rows, "key_sum", keySum, "count_sum", rows, "v_sum", vSum,
                "top_name_chars", nameChars, "top_name_epsilon_keys", epsilonKeys,
                "changelog_rows", changelog));
        boolean matches = RECEIVED.sum() == changelog && CNT.sum() == rows && TOTAL.sum() == vSum;
        expected.put("received", Model.obj("changelog_rows", RECEIVED.sum(), "count_sum", CNT.sum(), "v_sum", TOTAL.sum(),
                "matches_model", matches));
        expected.put("job_graph", nodes);
        Main.write(out.resolve("expected.json"), expected);
        if (!matches) {
            throw new IllegalStateException("the sink received " + RECEIVED.sum() + " rows, count sum " + CNT.sum()
                    + ", v sum " + TOTAL.sum() + "; the model: " + changelog + ", " + rows + ", " + vSum);
        }
        System.out.println("sql-size snapshot " + path + " in " + (System.currentTimeMillis() - t0) + " ms (emitted in "
                + (emitted - t0) + " ms, savepoint in " + (saved - emitted) + " ms)");
    }
}
