package flinkjob;

import java.io.Serializable;
import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.types.Row;

/**
 * The SQL job's deterministic input (mode=sql, see tests/flink/README.md, "The SQL job"): the
 * events of table `src` and the rows of table `dim`, each with its event time.
 */
public final class SqlInput implements Serializable {
    static final String[] NAMES = {"alpha", "beta", "gamma", "delta", "\u00e9psilon"};
    static final String[] TIERS = {"gold", "silver", "bronze"};
    /** Event time of src event seq: seq * SPACING_MS. */
    static final long SPACING_MS = 100L;
    static final long WATERMARK = 30_000L;
    static final LocalDateTime AT_BASE = LocalDateTime.of(2024, 1, 1, 0, 0);
    static final LocalDateTime SINCE_BASE = LocalDateTime.of(2023, 6, 1, 0, 0);
    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");

    /** One src event: k INT, name STRING, v BIGINT, price DECIMAL(10,2), ratio DOUBLE, flag BOOLEAN, at TIMESTAMP(3), rt. */
    public static final class Ev implements Serializable {
        public final int seq, keyIndex, k;
        public final String name;
        public final long v, rt;

        Ev(int seq, int keyIndex, int k, String name, long v, long rt) {
            this.seq = seq;
            this.keyIndex = keyIndex;
            this.k = k;
            this.name = name;
            this.v = v;
            this.rt = rt;
        }

        BigDecimal price() { return BigDecimal.valueOf(v, 2); }
        double ratio() { return v / 7.0; }
        boolean flag() { return v % 3 == 0; }
        LocalDateTime at() { return AT_BASE.plusNanos(rt * 1_000_000L).plusSeconds(keyIndex); }

        Row row() {
            return Row.of(k, name, v, price(), ratio(), flag(), at());
        }
    }

    /** One dim row: k INT, tier STRING, score DOUBLE, credit DECIMAL(12,3), vip BOOLEAN, since TIMESTAMP(3), rt. */
    public static final class Dim implements Serializable {
        public final int keyIndex, k, j;
        public final long rt;

        Dim(int keyIndex, int k, int j, long rt) {
            this.keyIndex = keyIndex;
            this.k = k;
            this.j = j;
            this.rt = rt;
        }

        String tier() { return TIERS[(keyIndex + j) % 3]; }
        double score() { return (keyIndex * 10 + j) / 4.0; }
        BigDecimal credit() { return BigDecimal.valueOf(keyIndex * 1000L + j * 7L + 1, 3); }
        boolean vip() { return (keyIndex + j) % 2 == 0; }
        LocalDateTime since() { return SINCE_BASE.plusHours(keyIndex).plusMinutes(j).plusNanos(123_000_000L); }

        Row row() {
            return Row.of(k, tier(), score(), credit(), vip(), since());
        }
    }

    public final long seed;
    public final int numKeys, numEvents, parallelism;
    public final long valueMax;

    public SqlInput(Scenario sc) {
        seed = sc.seed;
        numKeys = sc.numKeys;
        numEvents = sc.numEvents;
        parallelism = sc.parallelism;
        valueMax = sc.valueMax;
    }

    public int key(int keyIndex) {
        return keyIndex * 7 + 3;
    }

    /** Key index i's events go through src subtask i % parallelism, so each key's events stay in order. */
    public int subtaskOf(int keyIndex) {
        return keyIndex % parallelism;
    }

    /** java.util.Random(seed) draws each event's key index, name and value (distinct within a key). */
    public List<Ev> events() {
        Random rnd = new Random(seed);
        List<Set<Long>> used = new ArrayList<>();
        for (int i = 0; i < numKeys; i++) used.add(new HashSet<>());
        List<Ev> out = new ArrayList<>();
        for (int seq = 0; seq < numEvents; seq++) {
            int ki = rnd.nextInt(numKeys);
            String name = NAMES[rnd.nextInt(NAMES.length)];
            long v;
            do {
                v = 1 + rnd.nextInt((int) valueMax);
            } while (!used.get(ki).add(v));
            out.add(new Ev(seq, ki, key(ki), name, v, seq * SPACING_MS));
        }
        return out;
    }

    /** Two dim rows per key index i: at i*500 ms and at 20 000 + i*900 ms. */
    public List<Dim> dims() {
        List<Dim> out = new ArrayList<>();
        for (int i = 0; i < numKeys; i++) {
            out.add(new Dim(i, key(i), 0, i * 500L));
            out.add(new Dim(i, key(i), 1, 20_000L + i * 900L));
        }
        return out;
    }

    static TypeInformation<Row> srcType() {
        return Types.ROW_NAMED(new String[] {"k", "name", "v", "p", "ratio", "flag", "seen_at"},
                Types.INT, Types.STRING, Types.LONG, Types.BIG_DEC, Types.DOUBLE, Types.BOOLEAN, Types.LOCAL_DATE_TIME);
    }

    static TypeInformation<Row> dimType() {
        return Types.ROW_NAMED(new String[] {"k", "tier", "score", "credit", "vip", "since"},
                Types.INT, Types.STRING, Types.DOUBLE, Types.BIG_DEC, Types.BOOLEAN, Types.LOCAL_DATE_TIME);
    }

    /** A SQL value as expected.json spells it: DECIMAL as its plain string, TIMESTAMP as "yyyy-MM-dd HH:mm:ss.SSS", TIMESTAMP_LTZ as epoch ms. */
    static Object cell(Object v) {
        if (v instanceof BigDecimal) return ((BigDecimal) v).toPlainString();
        if (v instanceof LocalDateTime) return TS.format((LocalDateTime) v);
        if (v instanceof java.time.Instant) return ((java.time.Instant) v).toEpochMilli();
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) return ((Number) v).longValue();
        return v;
    }

    static List<Object> cells(Object... vs) {
        List<Object> l = new ArrayList<>();
        for (Object v : vs) l.add(cell(v));
        return l;
    }

    static String ts(long epochMs) {
        return TS.format(LocalDateTime.ofEpochSecond(Math.floorDiv(epochMs, 1000), (int) Math.floorMod(epochMs, 1000) * 1_000_000, java.time.ZoneOffset.UTC));
    }

    /** src's events (dim=false) or dim's rows for one source subtask; emits them, the watermark, then idles. */
    public static final class Source implements SourceBody<Row> {
        private final SqlInput in;
        private final boolean dim;
        private transient int subtask;
        private volatile boolean running = true;

        public Source(SqlInput in, boolean dim) {
            this.in = in;
            this.dim = dim;
        }

        @Override
        public void initializeState(org.apache.flink.runtime.state.FunctionInitializationContext ctx, int subtask) {
            this.subtask = subtask;
        }

        @Override
        public void snapshotState(org.apache.flink.runtime.state.FunctionSnapshotContext ctx) {}

        @Override
        public void run(Emitter<Row> out) throws Exception {
            emit(out);
            while (running) Sources.sleep();
        }

        /** This subtask's rows and the watermark (src waits for dim first). */
        void emit(Emitter<Row> out) throws Exception {
            if (dim) {
                synchronized (out.lock()) {
                    for (Dim d : in.dims()) if (in.subtaskOf(d.keyIndex) == subtask) out.collect(d.row(), d.rt);
                    out.watermark(WATERMARK);
                }
                Shared.dimDone.incrementAndGet();
            } else {
                // dim's rows reach the joins first (the interval join stores whether a row joined on arrival).
                while (running && Shared.dimDone.get() < in.parallelism) Sources.sleep();
                Thread.sleep(500);
                List<Ev> mine = new ArrayList<>();
                for (Ev e : in.events()) if (in.subtaskOf(e.keyIndex) == subtask) mine.add(e);
                for (Ev e : mine) {
                    if (!running) break;
                    synchronized (out.lock()) {
                        out.collect(e.row(), e.rt);
                    }
                }
                synchronized (out.lock()) {
                    out.watermark(WATERMARK);
                }
                Shared.sourcesDone.incrementAndGet();
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
