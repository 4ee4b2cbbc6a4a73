package flinkjob;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamGraphHasherV2;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * mode=sql: a Flink SQL job over deterministic input (SqlInput), one sink per statement that
 * records what it received; a savepoint once the sources emitted everything and the watermark,
 * and expected.json from a plain-Java model of each stateful operator (SqlModel). See
 * tests/flink/README.md, "The SQL job".
 */
public final class SqlJob {
    private SqlJob() {}

    /** The statements, by name, in the order they are added to the job. */
    static final Map<String, String> STATEMENTS = new LinkedHashMap<>();

    static {
        STATEMENTS.put("group_agg",
                "SELECT k, COUNT(*) AS cnt, SUM(v) AS total, MAX(name) AS top_name, COUNT(DISTINCT name) AS names "
                        + "FROM src GROUP BY k");
        STATEMENTS.put("retract_agg",
                "SELECT MOD(k, 4) AS b, MIN(v) AS min_v, MAX(v) AS max_v, COUNT(*) AS c FROM ("
                        + "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY rt DESC) AS rn FROM src) "
                        + "WHERE rn = 1) GROUP BY MOD(k, 4)");
        STATEMENTS.put("dedup_first",
                "SELECT k, name, v, price, ratio, flag, seen_at FROM ("
                        + "SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt ASC) AS rn FROM src) WHERE rn = 1");
        STATEMENTS.put("dedup_last",
                "SELECT k, name, v, price, ratio, flag, seen_at FROM ("
                        + "SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY rt DESC) AS rn FROM src) WHERE rn = 1");
        STATEMENTS.put("top_n",
                "SELECT k, v, name, rn FROM ("
                        + "SELECT k, v, name, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM src) WHERE rn <= 3");
        STATEMENTS.put("tumble",
                "SELECT k, window_start, window_end, COUNT(*) AS cnt, SUM(v) AS total "
                        + "FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(rt), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end");
        STATEMENTS.put("hop",
                "SELECT k, window_start, window_end, COUNT(*) AS cnt, MAX(v) AS max_v "
                        + "FROM TABLE(HOP(TABLE src, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
                        + "GROUP BY k, window_start, window_end");
        STATEMENTS.put("join",
                "SELECT s.k, s.v, s.price, s.flag, d.tier, d.score, d.credit, d.vip, d.since "
                        + "FROM src AS s JOIN dim AS d ON s.k = d.k");
        STATEMENTS.put("interval_join",
                "SELECT s.k, s.v, s.ratio, d.tier FROM src AS s JOIN dim AS d ON s.k = d.k "
                        + "AND s.rt BETWEEN d.rt - INTERVAL '4' SECOND AND d.rt + INTERVAL '4' SECOND");
        STATEMENTS.put("over",
                "SELECT k, v, SUM(v) OVER w AS s3, COUNT(*) OVER w AS c3, MIN(v) OVER w AS m3 FROM src "
                        + "WINDOW w AS (PARTITION BY k ORDER BY rt ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)");
    }

    /**
     * The knob extra-statement=true adds this statement ahead of the others (its own GROUP BY and
     * sink): the job of a statement set with one more INSERT, whose planned graph gives every other
     * stateful operator a new operator id (a job upgrade statectl's check and remap map).
     */
    static final String EXTRA_NAME = "extra_agg";

    /**
     * The extra statement; with the knob name-type (e.g. VARCHAR(64)) its grouping key is name cast
     * to that type (else STRING): a typed column whose type a job upgrade changes. With the knob
     * extra-aggregate (e.g. SUM(v)) one more aggregate ends its SELECT, as a2: its accumulator row
     * grows by that aggregate's buffer (a job upgrade adding an aggregate). With the knob
     * extra-filter (a condition such as v > 100) it aggregates only the rows it keeps (a job
     * upgrade changing a filter).
     */
    static String extraSql(String nameType, String extraAggregate, String extraFilter) {
        String name = nameType == null ? "name" : "CAST(name AS " + nameType + ")";
        String more = extraAggregate == null ? "" : ", " + extraAggregate + " AS a2";
        String where = extraFilter == null ? "" : " WHERE " + extraFilter;
        return "SELECT " + name + " AS name, COUNT(*) AS c" + more + " FROM src" + where + " GROUP BY " + name;
    }

    /** Name prefixes (up to '[') of the planner's stateful operators. */
    static final Set<String> STATEFUL = new HashSet<>(Arrays.asList(
            "GroupAggregate", "GlobalGroupAggregate", "Deduplicate", "Rank", "WindowAggregate", "GlobalWindowAggregate",
            "Join", "IntervalJoin", "OverAggregate", "WindowRank", "WindowDeduplicate", "WindowJoin"));

    /** Records each changelog row a statement's sink receives: [row kind, cells...]. */
    public static final class Collect implements MapFunction<Row, String> {
        private final String statement;

        public Collect(String statement) {
            this.statement = statement;
        }

        @Override
        public String map(Row row) {
            List<Object> entry = new ArrayList<>();
            entry.add(row.getKind().shortString());
            for (int i = 0; i < row.getArity(); i++) entry.add(SqlInput.cell(row.getField(i)));
            List<List<Object>> l = Shared.sqlReceived.computeIfAbsent(statement, s -> Collections.synchronizedList(new ArrayList<>()));
            l.add(entry);
            return "";
        }
    }

    static void run(Scenario sc) throws Exception {
        if (!sc.checkpoint.equals("none")) throw new IllegalArgumentException("mode=sql makes savepoints only (checkpoint=none)");
        if (sc.restoreFrom != null) throw new IllegalArgumentException("mode=sql starts without state: restore with mode=sql-restore");
        long t0 = System.currentTimeMillis();
        Path out = Paths.get(sc.out);
        Files.createDirectories(out);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration(sc));
        env.setParallelism(sc.parallelism);
        env.setMaxParallelism(sc.maxParallelism);
        SqlInput in = new SqlInput(sc);
        Plan plan = plan(env, new SqlInput.Source(in, false), new SqlInput.Source(in, true), sc);
        Map<Integer, Transformation<?>> transformations = plan.transformations;
        Map<Integer, String> statementOf = plan.statementOf;
        Map<String, List<String>> columns = plan.columns;

        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("flinkjob sql");
        Map<Integer, byte[]> hashes = new StreamGraphHasherV2().traverseStreamGraphAndGenerateHashes(graph);
        List<Object> nodes = new ArrayList<>();
        Map<String, Map<String, Object>> stateful = new LinkedHashMap<>();
        for (StreamNode n : graph.getStreamNodes()) {
            Map<String, Object> node = new LinkedHashMap<>();
            String name = n.getOperatorName();
            node.put("node_id", n.getId());
            node.put("name", name);
            node.put("description", n.getOperatorDescription());
            node.put("uid", n.getTransformationUID());
            node.put("operator_id", hex(hashes.get(n.getId())));
            node.put("statement", statementOf.get(n.getId()));
            node.put("parallelism", n.getParallelism());
            node.put("max_parallelism", sc.maxParallelism);
            List<Object> inputs = new ArrayList<>();
            for (StreamEdge e : n.getInEdges()) inputs.add(e.getSourceId());
            node.put("inputs", inputs);
            Transformation<?> tr = transformations.get(n.getId());
            node.put("output_type", tr == null ? null : tr.getOutputType().toString());
            List<Object> inTypes = new ArrayList<>();
            for (StreamEdge e : n.getInEdges()) {
                Transformation<?> up = transformations.get(e.getSourceId());
                inTypes.add(up == null ? null : up.getOutputType().toString());
            }
            node.put("input_types", inTypes);
            List<Object> keyTypes = new ArrayList<>();
            if (n.getStatePartitioners() != null) {
                for (Object ks : n.getStatePartitioners()) {
                    keyTypes.add(ks instanceof org.apache.flink.table.runtime.keyselector.RowDataKeySelector
                            ? ((org.apache.flink.table.runtime.keyselector.RowDataKeySelector) ks).getProducedType().toString()
                            : String.valueOf(ks));
                }
            }
            node.put("key_types", keyTypes);
            nodes.add(node);
            String prefix = name.contains("[") ? name.substring(0, name.indexOf('[')) : name;
            if (STATEFUL.contains(prefix)) {
                node.put("kind", prefix);
                stateful.put(name, node);
            }
        }
        nodes.sort((a, b) -> Integer.compare((Integer) ((Map<?, ?>) a).get("node_id"), (Integer) ((Map<?, ?>) b).get("node_id")));

        JobClient client = env.executeAsync(graph);
        Main.waitFor(client, "the sources emitted everything",
                () -> Shared.sourcesDone.get() == sc.parallelism && Shared.dimDone.get() == sc.parallelism);
        String path = Main.savepoint(client, out.resolve("savepoints").toUri().toString(), SavepointFormatType.valueOf(sc.format));
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception expected) {
            // cancelled
        }
        if (path.startsWith("file:")) path = Paths.get(java.net.URI.create(path)).toString();

        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        expected.put("mode", "sql");
        expected.put("snapshot", "savepoint");
        expected.put("savepoint_format", sc.format);
        expected.put("state_backend", sc.backend);
        expected.put("compression", sc.compression);
        expected.put("inline_threshold", sc.inlineThreshold);
        expected.put("savepoint_path", path);
        expected.put("parallelism", sc.parallelism);
        expected.put("max_parallelism", sc.maxParallelism);
        expected.put("watermark_at_snapshot", SqlInput.WATERMARK);
        expected.put("produce_wall_clock_ms", Arrays.asList(t0, System.currentTimeMillis()));
        expected.put("scenario", Model.obj("knobs", new TreeMap<>(sc.knobs)));
        SqlModel model = new SqlModel(in);
        expected.put("input", model.inputJson());
        Map<String, Object> statements = new LinkedHashMap<>();
        for (Map.Entry<String, String> st : STATEMENTS.entrySet()) {
            List<List<Object>> received = new ArrayList<>(Shared.sqlReceived.getOrDefault(st.getKey(), Collections.emptyList()));
            List<List<Object>> want = SqlModel.sorted(model.output(st.getKey()));
            List<List<Object>> got = SqlModel.materialize(received);
            List<Object> ops = new ArrayList<>();
            for (Map.Entry<String, Map<String, Object>> op : stateful.entrySet()) {
                if (st.getKey().equals(op.getValue().get("statement"))) ops.add(op.getKey());
            }
            statements.put(st.getKey(), Model.obj("sql", st.getValue(), "columns", columns.get(st.getKey()),
                    "operators", ops, "expected_output", want, "received_output", got,
                    "received_matches_model", want.equals(got), "received_changelog", SqlModel.sortedChangelog(received)));
        }
        expected.put("statements", statements);
        Map<String, Object> operators = new LinkedHashMap<>();
        for (Map.Entry<String, Map<String, Object>> op : stateful.entrySet()) {
            Map<String, Object> o = new LinkedHashMap<>();
            Map<String, Object> node = op.getValue();
            for (String f : new String[] {"name", "operator_id", "statement", "kind", "description", "parallelism",
                    "max_parallelism", "key_types", "input_types", "output_type", "node_id"}) {
                o.put(f, node.get(f));
            }
            if (!EXTRA_NAME.equals(node.get("statement"))) {  // the extra statement has no model
                o.put("state", model.state((String) node.get("statement"), (String) node.get("kind")));
            }
            operators.put(op.getKey(), o);
        }
        expected.put("operators", operators);
        expected.put("job_graph", nodes);
        Main.write(out.resolve("expected.json"), expected);
        System.out.println("sql snapshot " + path + " in " + (System.currentTimeMillis() - t0) + " ms");
    }

    /**
     * Main.configuration plus the knob state-ttl (absent: none), the planner's table.exec.state.ttl:
     * it wraps the state of the GROUP BYs, deduplications, Top-N and the regular join in TTL. The
     * table environment takes the execution environment's configuration as its root.
     */
    static Configuration configuration(Scenario sc) {
        Configuration conf = Main.configuration(sc);
        String ttl = sc.knobs.get("state-ttl");
        if (ttl != null) conf.setString("table.exec.state.ttl", ttl);
        return conf;
    }

    /** The job's transformations: each statement's (up to the two sources), its statement, its columns. */
    static final class Plan {
        final Map<Integer, Transformation<?>> transformations = new HashMap<>();
        final Map<Integer, String> statementOf = new HashMap<>();
        final Map<String, List<String>> columns = new LinkedHashMap<>();
    }

    /**
     * Adds the two sources (bodies *src* and *dim*, uids sql-src / sql-dim) and every statement with
     * its collecting sink to *env* (with the knob extra-statement, extraSql first). The same graph
     * whatever the bodies, so the same operator ids: mode=sql-restore restores mode=sql's savepoints
     * through it.
     */
    static Plan plan(StreamExecutionEnvironment env, SourceBody<Row> src, SourceBody<Row> dim, Scenario sc) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().setLocalTimeZone(ZoneOffset.UTC);
        resetPlannerIds(tEnv);
        DataStream<Row> srcDs = Compat.source(env, src, SqlInput.srcType(), "sql-src").uid("sql-src");
        DataStream<Row> dimDs = Compat.source(env, dim, SqlInput.dimType(), "sql-dim").uid("sql-dim");
        createViews(tEnv, srcDs, dimDs);
        Plan plan = new Plan();
        Set<Integer> sourceIds = new HashSet<>(Arrays.asList(srcDs.getTransformation().getId(), dimDs.getTransformation().getId()));
        if (Boolean.parseBoolean(sc.knobs.getOrDefault("extra-statement", "false"))) {
            addStatement(tEnv, plan, sourceIds, EXTRA_NAME, extraSql(sc.knobs.get("name-type"), sc.knobs.get("extra-aggregate"),
                    sc.knobs.get("extra-filter")));
        }
        for (Map.Entry<String, String> st : STATEMENTS.entrySet()) addStatement(tEnv, plan, sourceIds, st.getKey(), st.getValue());
        plan.transformations.put(srcDs.getTransformation().getId(), srcDs.getTransformation());
        plan.transformations.put(dimDs.getTransformation().getId(), dimDs.getTransformation());
        return plan;
    }

    private static void createViews(StreamTableEnvironment tEnv, DataStream<Row> srcDs, DataStream<Row> dimDs) {
        tEnv.createTemporaryView("src_raw", tEnv.fromDataStream(srcDs, Schema.newBuilder()
                .columnByMetadata("rt", org.apache.flink.table.api.DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                .columnByExpression("pt", "PROCTIME()")
                .watermark("rt", "SOURCE_WATERMARK()").build()));
        tEnv.createTemporaryView("dim_raw", tEnv.fromDataStream(dimDs, Schema.newBuilder()
                .columnByMetadata("rt", org.apache.flink.table.api.DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                .watermark("rt", "SOURCE_WATERMARK()").build()));
        tEnv.createTemporaryView("src", tEnv.sqlQuery("SELECT k, name, v, CAST(p AS DECIMAL(10, 2)) AS price, ratio, flag, "
                + "CAST(seen_at AS TIMESTAMP(3)) AS seen_at, rt, pt FROM src_raw"));
        tEnv.createTemporaryView("dim", tEnv.sqlQuery("SELECT k, tier, score, CAST(credit AS DECIMAL(12, 3)) AS credit, vip, "
                + "CAST(since AS TIMESTAMP(3)) AS since, rt FROM dim_raw"));
    }

    /** One statement: its changelog stream into sql-collect-<name> and sql-sink-<name>; its transformations up to the sources. */
    private static void addStatement(StreamTableEnvironment tEnv, Plan plan, Set<Integer> sourceIds, String name, String sql) {
        Table t = tEnv.sqlQuery(sql);
        plan.columns.put(name, t.getResolvedSchema().getColumnNames());
        DataStream<Row> changes = tEnv.toChangelogStream(t);
        Deque<Transformation<?>> todo = new ArrayDeque<>();
        todo.add(changes.getTransformation());
        while (!todo.isEmpty()) {
            Transformation<?> tr = todo.poll();
            plan.transformations.put(tr.getId(), tr);
            if (sourceIds.contains(tr.getId())) continue;
            plan.statementOf.putIfAbsent(tr.getId(), name);
            todo.addAll(tr.getInputs());
        }
        DataStream<String> seen = changes.map(new Collect(name)).uid("sql-collect-" + name).name("sql-collect-" + name);
        Compat.discard(seen, "sql-sink-" + name);
    }

    /**
     * The planner numbers its exec nodes (`GroupAggregate[4]`) with a JVM-wide counter: reset it so
     * that every run in one JVM gets the same operator names. The planner lives in its own class
     * loader (flink-table-planner-loader), hence reflection.
     */
    static void resetPlannerIds(StreamTableEnvironment tEnv) {
        try {
            Object planner = tEnv.getClass().getMethod("getPlanner").invoke(tEnv);
            Class<?> ctx = Class.forName("org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext", true,
                    planner.getClass().getClassLoader());
            java.lang.reflect.Method reset = ctx.getMethod("resetIdCounter");
            reset.invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot reset the planner's exec node ids", e);
        }
    }

    static String hex(byte[] b) {
        if (b == null) return null;
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }
}
