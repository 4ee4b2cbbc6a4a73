package flinkjob;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamGraphHasherV2;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.types.Row;

/**
 * mode=sql-restore: the SQL job (SqlJob.plan: same statements, same operator ids) started from
 * restore-from (a mode=sql savepoint; none: empty state), fed the second batch (SqlMore) and its
 * watermark; what every sink received after the restore goes to restored.json. first-batch=true
 * (no restore-from) is the reference: the first batch, then the second in the same job.
 * "Processed" is told by a savepoint: it completes once every operator had every record before it.
 */
public final class SqlRestore {
    private SqlRestore() {}

    /** The second batch may start (set once the first is processed, or at once after a restore). */
    static final AtomicBoolean secondGo = new AtomicBoolean();
    /** Source subtasks (src and dim) that emitted the second batch and its watermark. */
    static final AtomicInteger secondDone = new AtomicInteger();

    static void run(Scenario sc) throws Exception {
        long t0 = System.currentTimeMillis();
        boolean firstBatch = Boolean.parseBoolean(sc.knobs.getOrDefault("first-batch", "false"));
        if (firstBatch && sc.restoreFrom != null) throw new IllegalArgumentException("first-batch=true runs without restore-from");
        secondGo.set(false);
        secondDone.set(0);
        Path out = Paths.get(sc.out);
        Files.createDirectories(out);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration(sc));
        env.setParallelism(sc.parallelism);
        env.setMaxParallelism(sc.maxParallelism);
        SqlMore more = new SqlMore(new SqlInput(sc), sc.knobs);
        SqlJob.Plan plan = SqlJob.plan(env, new Source(more, false, firstBatch), new Source(more, true, firstBatch), sc);
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("flinkjob sql");
        Map<String, String> ids = operatorIds(graph);
        JobClient client = env.executeAsync(graph);
        String barriers = out.resolve("barriers").toUri().toString();
        SavepointFormatType format = SavepointFormatType.valueOf(sc.format);
        Map<String, Integer> boundary = new TreeMap<>();
        if (firstBatch) {
            Main.waitFor(client, "the first batch", () -> Shared.sourcesDone.get() == sc.parallelism && Shared.dimDone.get() == sc.parallelism);
            Main.savepoint(client, barriers, format);
            for (Map.Entry<String, List<List<Object>>> e : Shared.sqlReceived.entrySet()) boundary.put(e.getKey(), e.getValue().size());
        }
        secondGo.set(true);
        Main.waitFor(client, "the second batch", () -> secondDone.get() == 2 * sc.parallelism);
        Main.savepoint(client, barriers, format);
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception expected) {
            // cancelled
        }
        Map<String, Object> dump = dump(sc, more, plan, ids, boundary, firstBatch);
        Main.write(out.resolve("restored.json"), dump);
        System.out.println("sql restore of " + sc.restoreFrom + " in " + (System.currentTimeMillis() - t0) + " ms");
    }

    private static Configuration configuration(Scenario sc) {
        Configuration conf = SqlJob.configuration(sc);
        boolean allow = Boolean.parseBoolean(sc.knobs.getOrDefault("allow-non-restored", "false"));
        if (sc.restoreFrom != null) conf.setString(Compat.KEY_IGNORE_UNCLAIMED, String.valueOf(allow));
        return conf;
    }

    /** Every operator's id (the stream graph hash, as mode=sql's expected.json spells it), by name. */
    private static Map<String, String> operatorIds(StreamGraph graph) {
        Map<Integer, byte[]> hashes = new StreamGraphHasherV2().traverseStreamGraphAndGenerateHashes(graph);
        Map<String, String> ids = new TreeMap<>();
        for (StreamNode n : graph.getStreamNodes()) ids.put(n.getOperatorName(), SqlJob.hex(hashes.get(n.getId())));
        return ids;
    }

    private static Map<String, Object> dump(Scenario sc, SqlMore more, SqlJob.Plan plan, Map<String, String> ids,
                                            Map<String, Integer> boundary, boolean firstBatch) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        d.put("mode", "sql-restore");
        d.put("state_backend", sc.backend);
        d.put("restored_from", sc.restoreFrom);
        d.put("allow_non_restored", Boolean.parseBoolean(sc.knobs.getOrDefault("allow-non-restored", "false")));
        d.put("first_batch", firstBatch);
        d.put("parallelism", sc.parallelism);
        d.put("max_parallelism", sc.maxParallelism);
        d.put("scenario", Model.obj("knobs", new TreeMap<>(sc.knobs)));
        d.put("second_batch", Model.obj("src", more.eventsJson(), "watermark", more.watermark));
        d.put("operator_ids", ids);
        d.put("model_after_restore", more.model());
        Map<String, Object> statements = new LinkedHashMap<>();
        for (String name : plan.columns.keySet()) {  // SqlJob.STATEMENTS, and the extra statement if added
            List<List<Object>> all = new ArrayList<>(Shared.sqlReceived.getOrDefault(name, Collections.emptyList()));
            List<List<Object>> after = all.subList(boundary.getOrDefault(name, 0), all.size());
            Map<String, Object> st = Model.obj("columns", plan.columns.get(name), "received_changelog", SqlModel.sortedChangelog(after));
            if (firstBatch) st.put("received_output", SqlModel.materialize(all));
            statements.put(name, st);
        }
        d.put("statements", statements);
        return d;
    }

    /**
     * src (dim=false) or dim: with first-batch, SqlInput.Source's rows and watermark first; then, once
     * secondGo, src emits its subtask's second-batch events; both emit the second watermark, then idle.
     */
    public static final class Source implements SourceBody<Row> {
        private final SqlMore more;
        private final boolean dim, firstBatch;
        private final SqlInput.Source first;
        private transient int subtask;
        private volatile boolean running = true;

        public Source(SqlMore more, boolean dim, boolean firstBatch) {
            this.more = more;
            this.dim = dim;
            this.firstBatch = firstBatch;
            this.first = new SqlInput.Source(more.in, dim);
        }

        @Override
        public void initializeState(org.apache.flink.runtime.state.FunctionInitializationContext ctx, int subtask) {
            this.subtask = subtask;
            first.initializeState(ctx, subtask);
        }

        @Override
        public void snapshotState(org.apache.flink.runtime.state.FunctionSnapshotContext ctx) {}

        @Override
        public void run(Emitter<Row> out) throws Exception {
            if (firstBatch) first.emit(out);
            while (running && !secondGo.get()) Sources.sleep();
            synchronized (out.lock()) {
                if (!dim) for (SqlInput.Ev e : more.events()) if (more.in.subtaskOf(e.keyIndex) == subtask) out.collect(e.row(), e.rt);
                out.watermark(more.watermark);
            }
            secondDone.incrementAndGet();
            while (running) Sources.sleep();
        }

        @Override
        public void cancel() {
            running = false;
            first.cancel();
        }
    }
}
