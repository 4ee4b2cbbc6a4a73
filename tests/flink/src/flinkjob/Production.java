package flinkjob;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer;
import org.apache.flink.cep.CEP;
import org.apache.flink.cep.functions.PatternProcessFunction;
import org.apache.flink.cep.pattern.Pattern;
import org.apache.flink.cep.pattern.conditions.SimpleCondition;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.BucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.SimpleVersionedStringSerializer;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.DefaultRollingPolicy;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * mode=production: a job shaped like production jobs (tests/flink/README.md, "Production mode"):
 * Kryo-serialized state (a POJO with UUID, Optional and interface fields; a final class without a
 * no-argument constructor), a legacy-Kafka-consumer-like union state with a Kryo field, CEP, a
 * session window, an interval join, and a FileSource feeding a FileSink. Every value it holds at
 * the savepoint comes from a plain-Java model of the deterministic input, written as expected.json.
 */
public final class Production {
    private Production() {}

    static final long BASE = 1_750_000_000_000L;
    static final long SPACING_MS = 250L;
    static final long GAP_MS = 4_000L;
    static final long WITHIN_MS = 15_000L;
    static final long JOIN_LOWER_MS = -2_000L;
    static final long JOIN_UPPER_MS = 6_000L;
    static final String TOPIC = "payments.events";
    static final String[] FILES = {"orders-01", "orders-02", "orders-03"};
    static final int[] FILE_LINES = {120, 90, 7};
    static final long PART_SIZE = 4096L;
    static final String USER_FORMAT = "acct_%02d";
    static final String SERIALIZATION_CONFIG_ORGANIC = "flinkjob.Production$OrganicAttribution: {type: kryo}";
    static final String SERIALIZATION_CONFIG_DEVICE = "flinkjob.Production$DeviceInfo: {type: kryo}";

    /** Lines that passed file-parse (the savepoint waits for all of them). */
    static final AtomicInteger LINES = new AtomicInteger();

    // ---- the types ------------------------------------------------------------------------------

    /** The events: a POJO (PojoSerializer). */
    public static final class ClickEvent {
        public String user;
        public String type;
        public long ts;
        public long amount;
        public int partition;
        public long offset;

        public ClickEvent() {}
    }

    /** kryo-proc's profile: a POJO whose UUID, Optional and interface fields Flink gives to Kryo. */
    public static final class UserProfile {
        public UUID sessionId;
        public Optional<String> lastCoupon;
        public Attribution attribution;
        public long eventCount;
        public long totalAmount;
        public String lastType;

        public UserProfile() {}
    }

    public interface Attribution {}

    /** Registered with Kryo (pipeline.serialization-config): written as a registration id. */
    public static final class OrganicAttribution implements Attribution {
        public final String referrer;

        public OrganicAttribution(String referrer) {
            this.referrer = referrer;
        }
    }

    /** Not registered: Kryo writes its class name. */
    public static final class CampaignAttribution implements Attribution {
        public final String campaign;
        public final int touchpoints;

        public CampaignAttribution(String campaign, int touchpoints) {
            this.campaign = campaign;
            this.touchpoints = touchpoints;
        }
    }

    /** A final class without a no-argument constructor: not a POJO, so KryoSerializer. */
    public static final class DeviceInfo {
        public final String model;
        public final String os;
        public final int screenWidth;

        public DeviceInfo(String model, String os, int screenWidth) {
            this.model = model;
            this.os = os;
            this.screenWidth = screenWidth;
        }
    }

    /** Like Kafka's KafkaTopicPartition: not registered, written by KryoSerializer<TopicPartitionLike>. */
    public static final class TopicPartitionLike {
        public final String topic;
        public final int partition;

        public TopicPartitionLike(String topic, int partition) {
            this.topic = topic;
            this.partition = partition;
        }
    }

    // ---- the input ------------------------------------------------------------------------------

    static String user(int i) {
        return String.format(USER_FORMAT, i);
    }

    /** The events in seq order: Random(seed) draws user index, type draw, amount, in that order. */
    static List<ClickEvent> events(Scenario sc) {
        Random r = new Random(sc.seed);
        long[] offsets = new long[sc.partitions];
        List<ClickEvent> out = new ArrayList<>();
        for (int seq = 0; seq < sc.numEvents; seq++) {
            int u = r.nextInt(sc.numKeys);
            int t = r.nextInt(10);
            long amount = 1 + r.nextInt(500);
            ClickEvent e = new ClickEvent();
            e.user = user(u);
            e.type = t < 4 ? "view" : t < 6 ? "cart" : t < 8 ? "pay" : "login";
            e.ts = BASE + seq * SPACING_MS;
            e.amount = amount;
            e.partition = u % sc.partitions;
            e.offset = offsets[e.partition]++;
            out.add(e);
        }
        return out;
    }

    static long watermark(Scenario sc) {
        return BASE + (sc.numEvents - 1) * SPACING_MS;
    }

    static int userIndex(String user) {
        return Integer.parseInt(user.substring(user.indexOf('_') + 1));
    }

    static String fileLine(int file, int n) {
        StringBuilder payload = new StringBuilder("item-");
        for (int i = 0; i < (n * 7 + file * 3) % 30 + 5; i++) payload.append((char) ('a' + (n + i) % 26));
        return String.format("%s|%04d|%s", FILES[file], n, payload);
    }

    static int totalLines() {
        int n = 0;
        for (int l : FILE_LINES) n += l;
        return n;
    }

    // ---- the operators --------------------------------------------------------------------------

    /** legacy-offsets: a legacy source keeping its offsets as FlinkKafkaConsumer does (UNION list state). */
    public static final class OffsetsSource implements SourceBody<ClickEvent> {
        private final Scenario sc;
        private transient ListState<Tuple2<TopicPartitionLike, Long>> state;
        private transient Map<Integer, Long> offsets;
        private transient int subtask;
        private volatile boolean running = true;

        OffsetsSource(Scenario sc) {
            this.sc = sc;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        static TypeSerializer<Tuple2<TopicPartitionLike, Long>> stateSerializer() {
            // as FlinkKafkaConsumerBase.createStateSerializer: a KryoSerializer for the partition
            ExecutionConfig ec = new ExecutionConfig();
            TypeSerializer<?>[] fields = {new KryoSerializer<>(TopicPartitionLike.class, ec.getSerializerConfig()), LongSerializer.INSTANCE};
            return new TupleSerializer<>((Class<Tuple2<TopicPartitionLike, Long>>) (Class) Tuple2.class, fields);
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx, int subtask) throws Exception {
            this.subtask = subtask;
            offsets = new TreeMap<>();
            state = ctx.getOperatorStateStore().getUnionListState(
                    new ListStateDescriptor<>("topic-partition-offset-states", stateSerializer()));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            List<Tuple2<TopicPartitionLike, Long>> l = new ArrayList<>();
            synchronized (offsets) {
                for (Map.Entry<Integer, Long> e : offsets.entrySet()) l.add(Tuple2.of(new TopicPartitionLike(TOPIC, e.getKey()), e.getValue()));
            }
            state.update(l);
        }

        @Override
        public void run(Emitter<ClickEvent> out) throws Exception {
            List<ClickEvent> mine = new ArrayList<>();
            for (ClickEvent e : events(sc)) if (e.partition % sc.parallelism == subtask) mine.add(e);
            synchronized (out.lock()) {
                for (ClickEvent e : mine) {
                    out.collect(e, e.ts);
                    synchronized (offsets) {
                        offsets.put(e.partition, e.offset);
                    }
                }
                out.watermark(watermark(sc));
            }
            Shared.sourcesDone.incrementAndGet();
            while (running) Sources.sleep();
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    public static final class UserKey implements KeySelector<ClickEvent, String> {
        @Override
        public String getKey(ClickEvent e) {
            return e.user;
        }
    }

    public static final class IsType extends SimpleCondition<ClickEvent> implements FilterFunction<ClickEvent> {
        private final String type;

        IsType(String type) {
            this.type = type;
        }

        @Override
        public boolean filter(ClickEvent e) {
            return e.type.equals(type);
        }
    }

    /** kryo-proc: the Kryo states, updated per event as the model does. */
    public static final class KryoProc extends KeyedProcessFunction<String, ClickEvent, String> {
        private transient ValueState<UserProfile> profile;
        private transient ValueState<DeviceInfo> device;
        private transient ValueState<Integer> logins;

        @Override
        public void processElement(ClickEvent e, Context ctx, Collector<String> out) throws Exception {
            if (profile == null) {
                profile = getRuntimeContext().getState(new ValueStateDescriptor<>("profile", TypeInformation.of(UserProfile.class)));
                device = getRuntimeContext().getState(new ValueStateDescriptor<>("device", TypeInformation.of(DeviceInfo.class)));
                logins = getRuntimeContext().getState(new ValueStateDescriptor<>("logins", Types.INT));
            }
            UserProfile p = profile.value();
            Integer n = logins.value();
            DeviceInfo[] d = {device.value()};
            p = step(p, d, n, e);
            profile.update(p);
            if (e.type.equals("login")) {
                logins.update(n == null ? 1 : n + 1);
                device.update(d[0]);
            }
            out.collect(e.user + ":" + p.eventCount);
        }
    }

    /** One event's change to kryo-proc's state (the job and the model share it). */
    static UserProfile step(UserProfile p, DeviceInfo[] device, Integer logins, ClickEvent e) {
        int u = userIndex(e.user);
        if (p == null) {
            p = new UserProfile();
            p.sessionId = new UUID(0x5E55_1000_0000_0000L + u, 0L);
            p.lastCoupon = Optional.empty();
            p.attribution = u % 3 == 0 ? new CampaignAttribution("spring-" + (u % 4), 0)
                    : new OrganicAttribution("https://ref.example/" + u);
        }
        p.eventCount++;
        p.totalAmount += e.amount;
        p.lastType = e.type;
        if (e.type.equals("login")) {
            int n = logins == null ? 1 : logins + 1;
            p.sessionId = new UUID(0x5E55_1000_0000_0000L + u, (long) n << 32 | (e.ts - BASE) / SPACING_MS);
            long seq = (e.ts - BASE) / SPACING_MS;
            device[0] = new DeviceInfo("Pixel " + (6 + seq % 4), seq % 2 == 0 ? "android-14" : "android-15", 1080 + (int) (seq % 3) * 360);
        } else if (e.type.equals("pay")) {
            p.lastCoupon = e.amount % 4 == 0 ? Optional.empty() : Optional.of("SAVE" + e.amount % 50);
        } else if (e.type.equals("cart") && p.attribution instanceof CampaignAttribution) {
            CampaignAttribution c = (CampaignAttribution) p.attribution;
            p.attribution = new CampaignAttribution(c.campaign, c.touchpoints + 1);
        }
        return p;
    }

    public static final class Matched extends PatternProcessFunction<ClickEvent, String> {
        @Override
        public void processMatch(Map<String, List<ClickEvent>> match, Context ctx, Collector<String> out) {
            out.collect("match " + match.get("pay").get(0).user);
        }
    }

    public static final class SessionFn extends ProcessWindowFunction<ClickEvent, String, String, TimeWindow> {
        @Override
        public void process(String key, Context ctx, Iterable<ClickEvent> elements, Collector<String> out) {
            int n = 0;
            for (ClickEvent ignored : elements) n++;
            out.collect("session " + key + " " + n);
        }
    }

    public static final class JoinFn extends ProcessJoinFunction<ClickEvent, ClickEvent, String> {
        @Override
        public void processElement(ClickEvent cart, ClickEvent pay, Context ctx, Collector<String> out) {
            out.collect("joined " + cart.user + " " + cart.ts + " " + pay.ts);
        }
    }

    public static final class ParseLine implements MapFunction<String, String> {
        @Override
        public String map(String line) {
            LINES.incrementAndGet();
            return line;
        }
    }

    /** A bucket per input file: the line's first field. */
    public static final class ByFile implements BucketAssigner<String, String> {
        @Override
        public String getBucketId(String line, Context context) {
            return line.substring(0, line.indexOf('|'));
        }

        @Override
        public SimpleVersionedSerializer<String> getSerializer() {
            return SimpleVersionedStringSerializer.INSTANCE;
        }
    }

    // ---- the run --------------------------------------------------------------------------------

    static void writeInput(Path dir) throws Exception {
        Files.createDirectories(dir);
        for (int f = 0; f < FILES.length; f++) {
            StringBuilder b = new StringBuilder();
            for (int n = 0; n < FILE_LINES[f]; n++) b.append(fileLine(f, n)).append('\n');
            Files.write(dir.resolve(FILES[f] + ".txt"), b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    static void build(StreamExecutionEnvironment env, Scenario sc, Path input, Path output) {
        TypeInformation<ClickEvent> eti = TypeInformation.of(ClickEvent.class);
        DataStream<ClickEvent> events = Compat.source(env, new OffsetsSource(sc), eti, "legacy-offsets").uid("legacy-offsets");
        UserKey key = new UserKey();
        DataStream<String> proc = events.keyBy(key, Types.STRING).process(new KryoProc(), Types.STRING).uid("kryo-proc").name("kryo-proc");
        Pattern<ClickEvent, ClickEvent> pattern = Pattern.<ClickEvent>begin("cart").where(new IsType("cart"))
                .followedBy("pay").where(new IsType("pay")).within(Duration.ofMillis(WITHIN_MS));
        DataStream<String> cep = CEP.pattern(events.keyBy(key, Types.STRING), pattern).inEventTime()
                .process(new Matched(), Types.STRING).uid("cep").name("cep");
        DataStream<String> sessions = events.keyBy(key, Types.STRING).window(EventTimeSessionWindows.withGap(Duration.ofMillis(GAP_MS)))
                .process(new SessionFn(), Types.STRING).uid("session-win").name("session-win");
        DataStream<ClickEvent> carts = events.filter(new IsType("cart")).uid("carts").name("carts");
        DataStream<ClickEvent> pays = events.filter(new IsType("pay")).uid("pays").name("pays");
        DataStream<String> joined = carts.keyBy(key, Types.STRING).intervalJoin(pays.keyBy(key, Types.STRING))
                .between(Duration.ofMillis(JOIN_LOWER_MS), Duration.ofMillis(JOIN_UPPER_MS))
                .process(new JoinFn(), Types.STRING).uid("interval-join").name("interval-join");
        Compat.discard(proc.union(cep, sessions, joined), "alerts-sink");

        FileSource<String> source = FileSource.forRecordStreamFormat(new TextLineInputFormat(),
                        new org.apache.flink.core.fs.Path(input.toUri()))
                .monitorContinuously(Duration.ofHours(1)).build();
        FileSink<String> sink = FileSink.forRowFormat(new org.apache.flink.core.fs.Path(output.toUri()), new SimpleStringEncoder<String>("UTF-8"))
                .withBucketAssigner(new ByFile())
                .withRollingPolicy(DefaultRollingPolicy.builder().withMaxPartSize(new MemorySize(PART_SIZE))
                        .withRolloverInterval(Duration.ofHours(1)).withInactivityInterval(Duration.ofHours(1)).build())
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "file-source").uid("file-source")
                .map(new ParseLine()).uid("file-parse").name("file-parse")
                .sinkTo(sink).uid("file-sink").name("file-sink");
    }

    static void run(Scenario sc) throws Exception {
        long t0 = System.currentTimeMillis();
        LINES.set(0);
        Path out = Paths.get(sc.out);
        Path input = out.resolve("input"), output = out.resolve("sink-output");
        Files.createDirectories(out);
        writeInput(input);
        Configuration conf = Main.configuration(sc);
        conf.set(PipelineOptions.SERIALIZATION_CONFIG, Arrays.asList(SERIALIZATION_CONFIG_ORGANIC, SERIALIZATION_CONFIG_DEVICE));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(sc.parallelism);
        env.setMaxParallelism(sc.maxParallelism);
        build(env, sc, input, output);
        JobClient client = env.executeAsync("flinkjob production");
        Main.waitFor(client, "the sources emitted everything",
                () -> Shared.sourcesDone.get() == sc.parallelism && LINES.get() == totalLines());
        long emitted = System.currentTimeMillis() - t0;
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
        expected.put("mode", sc.mode);
        expected.put("snapshot", "savepoint");
        expected.put("savepoint_path", path);
        expected.put("savepoint_format", sc.format);
        expected.put("state_backend", sc.backend);
        expected.put("parallelism", sc.parallelism);
        expected.put("max_parallelism", sc.maxParallelism);
        expected.put("input_dir", input.toString());
        expected.put("sink_dir", output.toString());
        expected.putAll(ProductionModel.expected(sc));
        expected.put("phases_ms", Model.obj("emitted", emitted, "savepoint", System.currentTimeMillis() - t0 - emitted));
        Main.write(out.resolve("expected.json"), expected);
        System.out.println("snapshot " + path + " in " + (System.currentTimeMillis() - t0) + " ms");
    }
}
