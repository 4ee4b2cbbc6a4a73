package flinkjob;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The job's operators. None overrides open(): its signature differs between Flink 1.x and 2.x, so
 * keyed state handles are created on first use.
 */
public final class Operators {
    private Operators() {}

    public static final MapStateDescriptor<String, String> RULES =
            new MapStateDescriptor<>("rules", Types.STRING, Types.STRING);

    /** The typed key of an event (its key index looked up in the scenario's key list). */
    public static final class EventKey<K> implements KeySelector<Event, K> {
        private final Scenario sc;

        public EventKey(Scenario sc) {
            this.sc = sc;
        }

        @Override
        @SuppressWarnings("unchecked")
        public K getKey(Event e) {
            return (K) sc.keys().get(e.keyIndex);
        }
    }

    public static final class TupleKey<K> implements KeySelector<Tuple2<K, Long>, K> {
        @Override
        public K getKey(Tuple2<K, Long> t) {
            return t.f0;
        }
    }

    /** Counts what passed; union list state `union-counts` (each subtask writes only its own entries). */
    public static final class UnionOp extends RichMapFunction<Event, Event> implements CheckpointedFunction {
        private transient ListState<String> state;
        private transient int subtask;
        private long events;
        private long valueSum;
        private long maxSeq = -1;

        @Override
        public Event map(Event e) {
            if (!e.probe) {
                events++;
                valueSum += e.value;
                maxSeq = Math.max(maxSeq, e.seq);
            }
            return e;
        }

        static List<String> entries(int subtask, long events, long valueSum, long maxSeq) {
            return Arrays.asList("subtask=" + subtask, "events=" + events, "value_sum=" + valueSum, "max_seq=" + maxSeq);
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            state.update(entries(subtask, events, valueSum, maxSeq));
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            subtask = Compat.subtask(getRuntimeContext());
            state = ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("union-counts", Types.STRING));
            if (ctx.isRestored()) {
                List<Object> got = new ArrayList<>();
                for (String s : state.get()) got.add(s);
                Shared.record("union-op", "union-counts", String.valueOf(subtask), got);
            }
        }
    }

    /** Applies the rules to its broadcast state `rules`; labels each event with its type's rule. */
    public static final class Bcast extends BroadcastProcessFunction<Event, Tuple3<String, String, String>, Event>
            implements CheckpointedFunction {
        @Override
        public void processElement(Event e, ReadOnlyContext ctx, Collector<Event> out) throws Exception {
            e.label = ctx.getBroadcastState(RULES).get("type:" + e.type);
            out.collect(e);
        }

        @Override
        public void processBroadcastElement(Tuple3<String, String, String> rule, Context ctx, Collector<Event> out)
                throws Exception {
            BroadcastState<String, String> rules = ctx.getBroadcastState(RULES);
            if (rule.f0.equals("put")) rules.put(rule.f1, rule.f2);
            else rules.remove(rule.f1);
            Shared.rulesApplied.incrementAndGet();
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {}

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            if (!ctx.isRestored()) return;
            BroadcastState<String, String> rules = ctx.getOperatorStateStore().getBroadcastState(RULES);
            Map<String, Object> got = new TreeMap<>();
            for (Map.Entry<String, String> e : rules.entries()) got.put(e.getKey(), e.getValue());
            Shared.record("bcast", "rules", String.valueOf(Compat.subtask(getRuntimeContext())), got);
        }
    }

    public static final class SumLong implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    /** avg: accumulator (sum, count), result sum / count. */
    public static final class Avg implements AggregateFunction<Long, Tuple2<Long, Long>, Double> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long v, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + v, acc.f1 + 1);
        }

        @Override
        public Double getResult(Tuple2<Long, Long> acc) {
            return acc.f1 == 0 ? null : (double) acc.f0 / acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /**
     * proc's TTL. A restore reads values however old their timestamps (the dev fixtures' expired a
     * day after they were made): visibility ReturnExpiredIfNotCleanedUp and no background cleanup,
     * which Flink does not store in a savepoint (only TTL on or off is).
     */
    public static StateTtlConfig ttl(boolean restore) {
        StateTtlConfig.Builder b = Compat.ttlBuilder(Scenario.TTL_MS).setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite);
        if (!restore) return b.setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired).build();
        return b.setStateVisibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp).disableCleanupInBackground().build();
    }

    /** proc: the keyed states of the scenario's groups, event- and processing-time timers. */
    public static final class Proc<K> extends KeyedProcessFunction<K, Event, Tuple2<K, Long>> {
        private final Scenario sc;
        private transient ValueState<Long> count;
        private transient ListState<String> events;
        private transient MapState<String, Long> attrs;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, Double> avg;
        private transient ValueState<Double> ratio;
        private transient ValueState<Boolean> flag;
        private transient ValueState<String> lastType;
        private transient ListState<Long> values;
        private transient MapState<Long, String> byBucket;
        private transient ValueState<Tuple2<String, Long>> last;
        private transient ValueState<Object> profile;
        private transient ValueState<String> ttlLast;
        private transient MapState<String, Long> ttlSeen;
        private transient ValueState<List<Long>> recent;
        private transient ValueState<Map<String, Integer>> typeCounts;
        private transient ListState<Tuple2<Integer, Boolean>> marks;
        private transient ValueState<KryoBox> kryo;

        public Proc(Scenario sc) {
            this.sc = sc;
        }

        private void states() {
            if (count != null) return;
            org.apache.flink.api.common.functions.RuntimeContext rc = getRuntimeContext();
            count = rc.getState(new ValueStateDescriptor<>("count", Types.LONG));
            events = rc.getListState(new ListStateDescriptor<>("events", Types.STRING));
            attrs = rc.getMapState(new MapStateDescriptor<>("attrs", Types.STRING, Types.LONG));
            sum = rc.getReducingState(new ReducingStateDescriptor<>("sum", new SumLong(), Types.LONG));
            avg = rc.getAggregatingState(new AggregatingStateDescriptor<>("avg", new Avg(), Types.TUPLE(Types.LONG, Types.LONG)));
            if (sc.has("scalars")) {
                ratio = rc.getState(new ValueStateDescriptor<>("ratio", Types.DOUBLE));
                flag = rc.getState(new ValueStateDescriptor<>("flag", Types.BOOLEAN));
                lastType = rc.getState(new ValueStateDescriptor<>("last_type", Types.STRING));
                values = rc.getListState(new ListStateDescriptor<>("values", Types.LONG));
                byBucket = rc.getMapState(new MapStateDescriptor<>("by_bucket", Types.LONG, Types.STRING));
            }
            if (sc.has("composite")) {
                last = rc.getState(new ValueStateDescriptor<>("last", Types.TUPLE(Types.STRING, Types.LONG)));
                profile = rc.getState(new ValueStateDescriptor<>("profile", Profiles.typeInfo(sc.pojoClass)));
            }
            if (sc.has("ttl")) {
                ValueStateDescriptor<String> tl = new ValueStateDescriptor<>("ttl_last", Types.STRING);
                tl.enableTimeToLive(ttl(sc.mode.equals("restore")));
                ttlLast = rc.getState(tl);
                MapStateDescriptor<String, Long> ts = new MapStateDescriptor<>("ttl_seen", Types.STRING, Types.LONG);
                ts.enableTimeToLive(ttl(sc.mode.equals("restore")));
                ttlSeen = rc.getMapState(ts);
            }
            if (sc.has("collections")) {
                recent = rc.getState(new ValueStateDescriptor<>("recent", Types.LIST(Types.LONG)));
                typeCounts = rc.getState(new ValueStateDescriptor<>("type_counts", Types.MAP(Types.STRING, Types.INT)));
                marks = rc.getListState(new ListStateDescriptor<>("marks", Types.TUPLE(Types.INT, Types.BOOLEAN)));
            }
            if (sc.has("kryo")) {
                kryo = rc.getState(new ValueStateDescriptor<>("kryo", new org.apache.flink.api.java.typeutils.GenericTypeInfo<>(KryoBox.class)));
            }
        }

        private static void bump(MapState<String, Long> m, String k, long by) throws Exception {
            Long v = m.get(k);
            m.put(k, (v == null ? 0 : v) + by);
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Tuple2<K, Long>> out) throws Exception {
            states();
            String label = Scenario.label(ctx.getCurrentKey());
            if (e.probe) {
                dump(label);
                return;
            }
            long ts = ctx.timestamp();
            Long c = count.value();
            count.update(c == null ? 1 : c + 1);
            events.add(e.seq + ":" + e.type + ":" + e.value);
            bump(attrs, "type:" + e.type, 1);
            bump(attrs, "label:" + e.label, 1);
            Long mx = attrs.get("max_value");
            attrs.put("max_value", mx == null ? e.value : Math.max(mx, e.value));
            attrs.put("last_seq", e.seq);
            sum.add(e.value);
            avg.add(e.value);
            ctx.timerService().registerEventTimeTimer(Scenario.eventTimer(ts));
            ctx.timerService().registerProcessingTimeTimer(Scenario.processingTimer(e.keyIndex, false));
            if (e.type.equals("buy")) ctx.timerService().registerProcessingTimeTimer(Scenario.processingTimer(e.keyIndex, true));
            if (sc.has("scalars")) {
                ratio.update(e.value / 7.0);
                flag.update(e.type.equals("buy"));
                lastType.update(e.type + "/" + e.label);
                values.add(e.value);
                long b = Scenario.bucketStart(ts);
                String prev = byBucket.get(b);
                byBucket.put(b, prev == null ? e.type : prev + "," + e.type);
            }
            if (sc.has("composite")) {
                last.update(Tuple2.of(e.type, e.value));
                Map<String, Object> p = Profiles.json(profile.value());
                profile.update(Profiles.of(sc.pojoClass, p == null ? 1 : (Integer) p.get("hits") + 1,
                        e.type.equals("view") ? null : label + "/" + e.label, (p == null ? 0 : (Long) p.get("total")) + e.value));
            }
            if (sc.has("ttl")) {
                ttlLast.update(e.label + "@" + e.seq);
                bump(ttlSeen, e.type, 1);
            }
            if (sc.has("collections")) {
                recent.update(Scenario.recent(recent.value(), e.value));
                Map<String, Integer> tc = typeCounts.value() == null ? new TreeMap<>() : new TreeMap<>(typeCounts.value());
                tc.merge(e.type, 1, Integer::sum);
                typeCounts.update(tc);
                marks.add(Tuple2.of((int) e.seq, e.type.equals("buy")));
            }
            if (sc.has("kryo")) {
                KryoBox b = kryo.value();
                kryo.update(new KryoBox(e.type, (b == null ? 0 : b.total) + e.value));
            }
            out.collect(Tuple2.of(ctx.getCurrentKey(), e.value));
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Tuple2<K, Long>> out) throws Exception {
            states();
            String label = Scenario.label(ctx.getCurrentKey());
            if (sc.mode.equals("restore")) {
                Shared.firedTimers.computeIfAbsent(label, l -> java.util.Collections.synchronizedList(new ArrayList<>())).add(ts);
            }
            bump(attrs, "fired_timers", 1);
            attrs.put("last_fired", ts);
            if (sc.indexOfKey().get(ctx.getCurrentKey()) % 5 == 0) sum.clear();
        }

        private static <T> List<Object> list(Iterable<T> it) {
            List<Object> l = new ArrayList<>();
            if (it != null) for (T x : it) l.add(x);
            return l;
        }

        private static <V> Map<String, Object> map(MapState<?, V> m) throws Exception {
            Map<String, Object> r = new TreeMap<>();
            for (Map.Entry<?, V> e : m.entries()) r.put(String.valueOf(e.getKey()), e.getValue());
            return r;
        }

        private static void put(String state, String label, Object v) {
            boolean empty = v == null || (v instanceof List && ((List<?>) v).isEmpty()) || (v instanceof Map && ((Map<?, ?>) v).isEmpty());
            if (!empty) Shared.record("proc", state, label, v);
        }

        /** Restore mode: reads every state of the current key through the state API. */
        private void dump(String label) throws Exception {
            put("count", label, count.value());
            put("events", label, list(events.get()));
            put("attrs", label, map(attrs));
            put("sum", label, sum.get());
            Double a = avg.get();
            if (a != null) {
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("result", a);
                put("avg", label, r);
            }
            if (sc.has("scalars")) {
                put("ratio", label, ratio.value());
                put("flag", label, flag.value());
                put("last_type", label, lastType.value());
                put("values", label, list(values.get()));
                put("by_bucket", label, map(byBucket));
            }
            if (sc.has("composite")) {
                Tuple2<String, Long> t = last.value();
                put("last", label, t == null ? null : Arrays.asList(t.f0, t.f1));
                put("profile", label, Profiles.json(profile.value()));
            }
            if (sc.has("ttl")) {
                put("ttl_last", label, ttlLast.value());
                put("ttl_seen", label, map(ttlSeen));
            }
            if (sc.has("collections")) {
                put("recent", label, recent.value() == null ? null : new ArrayList<Object>(recent.value()));
                put("type_counts", label, typeCounts.value() == null ? null : new TreeMap<String, Object>(typeCounts.value()));
                List<Object> m = new ArrayList<>();
                for (Tuple2<Integer, Boolean> t : marks.get()) m.add(Arrays.asList(t.f0, t.f1));
                put("marks", label, m);
            }
            if (sc.has("kryo")) put("kryo", label, KryoBox.json(kryo.value()));
        }
    }

    /** Size mode: one value (the key index) and one list (label, index) per key. */
    public static final class SizeProc<K> extends KeyedProcessFunction<K, Event, Tuple2<K, Long>> {
        private transient ValueState<Long> count;
        private transient ListState<String> events;

        @Override
        public void processElement(Event e, Context ctx, Collector<Tuple2<K, Long>> out) throws Exception {
            if (count == null) {
                count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
                events = getRuntimeContext().getListState(new ListStateDescriptor<>("events", Types.STRING));
            }
            count.update(e.value);
            events.add(Scenario.label(ctx.getCurrentKey()));
            events.add(String.valueOf(e.value));
        }
    }

    public static final class SumF1<K> implements ReduceFunction<Tuple2<K, Long>> {
        @Override
        public Tuple2<K, Long> reduce(Tuple2<K, Long> a, Tuple2<K, Long> b) {
            return Tuple2.of(a.f0, a.f1 + b.f1);
        }
    }

    /** Emits a fired window's label; in restore mode records (label, window, reduced value). */
    public static final class WinFn<K> extends ProcessWindowFunction<Tuple2<K, Long>, String, K, TimeWindow> {
        private final Scenario sc;

        public WinFn(Scenario sc) {
            this.sc = sc;
        }

        @Override
        public void process(K key, Context ctx, Iterable<Tuple2<K, Long>> elements, Collector<String> out) {
            Tuple2<K, Long> v = elements.iterator().next();
            String label = Scenario.label(key);
            if (sc.mode.equals("restore")) {
                synchronized (Shared.firedWindows) {
                    Shared.firedWindows.add(new Object[] {label, ctx.window().getStart(), ctx.window().getEnd(), Scenario.keyJson(v.f0), v.f1});
                }
            }
            out.collect(label);
        }
    }
}
