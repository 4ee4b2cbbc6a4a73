package flinkjob;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Declared mode: restores a savepoint into a job that declares its states in a JSON description
 * (knob spec=FILE; tests/flink/README.md), one operator per entry, and dumps everything restored:
 * every key of every keyed state with its value (TTL states: value and last-access timestamp),
 * timers pending at restore and those fired by the end-of-input watermark, operator, union and
 * broadcast state per subtask.
 */
public final class Declared {
    private Declared() {}

    static final String SOURCE_UID = "flinkjob-declared-source";
    /** uid -> dump of that operator (filled by its subtasks). */
    static final Map<String, Map<String, Object>> DUMP = new TreeMap<>();

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v == null ? Collections.emptyList() : (List<Map<String, Object>>) v;
    }

    static String str(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v == null) throw new IllegalArgumentException("declared state " + m.get("name") + ": missing \"" + key + "\"");
        return (String) v;
    }

    /** Where a value goes in DUMP: a path of map keys from the operator's entry, then put or append. */
    @SuppressWarnings("unchecked")
    static synchronized void record(String uid, Object value, boolean append, String... path) {
        Map<String, Object> m = DUMP.computeIfAbsent(uid, u -> new TreeMap<>());
        for (int i = 0; i < path.length - 1; i++) m = (Map<String, Object>) m.computeIfAbsent(path[i], k -> new TreeMap<>());
        String last = path[path.length - 1];
        if (append) ((List<Object>) m.computeIfAbsent(last, k -> new ArrayList<>())).add(value);
        else m.put(last, value);
    }

    /** An empty map or list at a path unless a subtask already put one there (every subtask calls it). */
    @SuppressWarnings("unchecked")
    static synchronized void ensure(String uid, Object empty, String... path) {
        Map<String, Object> m = DUMP.computeIfAbsent(uid, u -> new TreeMap<>());
        for (int i = 0; i < path.length - 1; i++) m = (Map<String, Object>) m.computeIfAbsent(path[i], k -> new TreeMap<>());
        m.putIfAbsent(path[path.length - 1], empty);
    }

    @SuppressWarnings("unchecked")
    public static void run(Scenario sc) throws Exception {
        long t0 = System.currentTimeMillis();
        Map<String, Object> spec = (Map<String, Object>) Json.parse(
                new String(Files.readAllBytes(Paths.get(sc.knobs.get("spec"))), StandardCharsets.UTF_8));
        synchronized (Declared.class) {
            DUMP.clear();
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Main.configuration(sc));
        env.setParallelism(1);
        DataStream<Event> src = Compat.source(env, new End(), TypeInformation.of(Event.class), SOURCE_UID).uid(SOURCE_UID);
        Map<String, Object> ops = new TreeMap<>();
        for (Map<String, Object> op : list(spec, "operators")) {
            String id = op.containsKey("uid") ? str(op, "uid") : str(op, "uid_hash");
            Object keyType = op.get("key_type");
            SingleOutputStreamOperator<Void> out;
            if (keyType == null) {
                out = src.rebalance().transform("declared " + id, TypeInformation.of(Void.class), new Op<Object>(op));
            } else {
                TypeInformation<Object> kti = (TypeInformation<Object>) FlinkTypes.parse((String) keyType);
                out = src.keyBy(new NoKey(), kti).transform("declared " + id, TypeInformation.of(Void.class), new Op<Object>(op));
            }
            if (op.containsKey("uid")) out.uid(id);
            else out.setUidHash(id);
            out.setParallelism(((Long) op.get("parallelism")).intValue());
            if (op.get("max_parallelism") != null) out.setMaxParallelism(((Long) op.get("max_parallelism")).intValue());
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("parallelism", op.get("parallelism"));
            entry.put("max_parallelism", op.get("max_parallelism"));
            if (keyType != null) entry.put("key_type", keyType);
            ops.put(id, entry);
        }
        env.execute("flinkjob declared");
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        run.put("mode", "declared");
        run.put("state_backend", sc.backend);
        run.put("restored_from", sc.restoreFrom);
        run.put("restore_wall_clock_ms", java.util.Arrays.asList(t0, System.currentTimeMillis()));
        synchronized (Declared.class) {
            for (Map.Entry<String, Object> e : ops.entrySet()) {
                Map<String, Object> entry = (Map<String, Object>) e.getValue();
                Map<String, Object> dumped = DUMP.getOrDefault(e.getKey(), new TreeMap<>());
                sortLists(dumped);
                entry.putAll(dumped);
            }
        }
        run.put("operators", ops);
        Files.createDirectories(Paths.get(sc.out));
        Main.write(Paths.get(sc.out).resolve("restored.json"), run);
        System.out.println("declared restore of " + sc.restoreFrom + " in " + (System.currentTimeMillis() - t0) + " ms");
    }

    /** Lists of {key, ...} records (window namespaces, their timers) in a stable order. */
    @SuppressWarnings("unchecked")
    static void sortLists(Map<String, Object> m) {
        for (Map.Entry<String, Object> e : m.entrySet()) {
            Object v = e.getValue();
            if (v instanceof Map) sortLists((Map<String, Object>) v);
            else if (v instanceof List && !((List<?>) v).isEmpty() && ((List<?>) v).get(0) instanceof Map) {
                ((List<Object>) v).sort((a, b) -> Json.write(a).compareTo(Json.write(b)));
            }
        }
    }

    static final class NoKey implements KeySelector<Event, Object> {
        @Override
        public Object getKey(Event e) {
            throw new IllegalStateException("declared mode sends no records");
        }
    }

    /** The source: no records; when it ends, Flink's end-of-input watermark fires every event-time timer. */
    static final class End implements SourceBody<Event> {
        @Override
        public void initializeState(FunctionInitializationContext ctx, int subtask) {}

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {}

        @Override
        public void run(Emitter<Event> out) {}

        @Override
        public void cancel() {}
    }

    static final class Never<T> implements ReduceFunction<T> {
        @Override
        public T reduce(T a, T b) {
            throw new IllegalStateException("declared mode only reads state");
        }
    }

    /** An aggregate whose result is its accumulator, so a restored AGGREGATING state reads as stored. */
    static final class Stored<T> implements AggregateFunction<T, T, T> {
        @Override
        public T createAccumulator() {
            return null;
        }

        @Override
        public T add(T v, T acc) {
            throw new IllegalStateException("declared mode only reads state");
        }

        @Override
        public T getResult(T acc) {
            return acc;
        }

        @Override
        public T merge(T a, T b) {
            throw new IllegalStateException("declared mode only reads state");
        }
    }

    /** One declared operator: claims its states on restore and dumps them (see the class comment). */
    static final class Op<K> extends AbstractStreamOperator<Void> implements OneInputStreamOperator<Event, Void>, Triggerable<K, Object> {
        private final Map<String, Object> spec;
        private final String id;

        Op(Map<String, Object> spec) {
            this.spec = spec;
            this.id = spec.containsKey("uid") ? (String) spec.get("uid") : (String) spec.get("uid_hash");
        }

        @Override
        public void processElement(StreamRecord<Event> element) {}

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void initializeState(StateInitializationContext ctx) throws Exception {
            super.initializeState(ctx);
            String subtask = String.valueOf(Compat.subtask(getRuntimeContext()));
            OperatorStateStore store = ctx.getOperatorStateStore();
            for (Map<String, Object> s : list(spec, "operator_state")) {
                String name = str(s, "name");
                String distribution = (String) s.getOrDefault("distribution", "SPLIT_DISTRIBUTE");
                ListStateDescriptor d = new ListStateDescriptor<>(name, FlinkTypes.parse(str(s, "element_type")));
                ListState<Object> st = distribution.equals("UNION") ? store.getUnionListState(d) : store.getListState(d);
                record(id, distribution, false, "operator_state", name, "distribution");
                record(id, FlinkTypes.json(st.get()), false, "operator_state", name, "subtasks", subtask);
            }
            for (Map<String, Object> s : list(spec, "broadcast_state")) {
                String name = str(s, "name");
                BroadcastState<Object, Object> st = store.getBroadcastState(new MapStateDescriptor<>(name,
                        (TypeInformation<Object>) FlinkTypes.parse(str(s, "key_type")), (TypeInformation<Object>) FlinkTypes.parse(str(s, "value_type"))));
                Map<Object, Object> m = new LinkedHashMap<>();
                for (Map.Entry<Object, Object> e : st.entries()) m.put(e.getKey(), e.getValue());
                record(id, FlinkTypes.json(m), false, "broadcast_state", name, "subtasks", subtask);
            }
        }

        /** A TTL state's serializer: Flink's TtlSerializer over the value's, so values read as TtlValue (timestamp, value). */
        @SuppressWarnings({"unchecked", "rawtypes"})
        private TypeSerializer<Object> serializer(String spelling, boolean ttl) {
            TypeSerializer<Object> s = (TypeSerializer<Object>) Compat.serializer(FlinkTypes.parse(spelling), getExecutionConfig());
            return ttl ? (TypeSerializer) new TtlStateFactory.TtlSerializer<>(LongSerializer.INSTANCE, s) : s;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        private StateDescriptor<?, ?> descriptor(Map<String, Object> s) {
            String name = str(s, "name");
            boolean ttl = Boolean.TRUE.equals(s.get("ttl"));
            switch (str(s, "kind")) {
                case "VALUE": return new ValueStateDescriptor<>(name, serializer(str(s, "type"), ttl));
                case "LIST": return new ListStateDescriptor<>(name, serializer(str(s, "element_type"), ttl));
                case "MAP": return new MapStateDescriptor<>(name, serializer(str(s, "user_key_type"), false), serializer(str(s, "user_value_type"), ttl));
                case "REDUCING": return new ReducingStateDescriptor<>(name, new Never<>(), serializer(str(s, "type"), ttl));
                case "AGGREGATING": return new AggregatingStateDescriptor<>(name, (AggregateFunction) new Stored<>(), serializer(str(s, "accumulator_type"), ttl));
                default: throw new IllegalArgumentException("declared state " + name + ": kind must be VALUE, LIST, MAP, REDUCING or AGGREGATING");
            }
        }

        /** A state's content for the current key and namespace: [value as JSON, last-access timestamps or null]; null when empty. */
        @SuppressWarnings("unchecked")
        private static Object[] read(String kind, State st) throws Exception {
            Object raw;
            switch (kind) {
                case "VALUE": raw = ((ValueState<Object>) st).value(); break;
                case "REDUCING": raw = ((ReducingState<Object>) st).get(); break;
                case "AGGREGATING": raw = ((AggregatingState<Object, Object>) st).get(); break;
                case "LIST": {
                    Iterable<Object> it = ((ListState<Object>) st).get();
                    List<Object> l = new ArrayList<>();
                    if (it != null) for (Object x : it) l.add(x);
                    raw = l.isEmpty() ? null : l;
                    break;
                }
                default: {
                    Map<Object, Object> m = new LinkedHashMap<>();
                    for (Map.Entry<Object, Object> e : ((MapState<Object, Object>) st).entries()) m.put(e.getKey(), e.getValue());
                    raw = m.isEmpty() ? null : m;
                }
            }
            if (raw == null) return null;
            return new Object[] {FlinkTypes.json(unwrap(raw, false)), hasTtl(raw) ? FlinkTypes.json(unwrap(raw, true)) : null};
        }

        private static boolean hasTtl(Object raw) {
            if (raw instanceof TtlValue) return true;
            if (raw instanceof List) return !((List<?>) raw).isEmpty() && ((List<?>) raw).get(0) instanceof TtlValue;
            if (raw instanceof Map) return !((Map<?, ?>) raw).isEmpty() && ((Map<?, ?>) raw).values().iterator().next() instanceof TtlValue;
            return false;
        }

        /** The user values (or, with stamps, the last-access timestamps) inside TtlValues. */
        private static Object unwrap(Object raw, boolean stamps) {
            if (raw instanceof TtlValue) return stamps ? ((TtlValue<?>) raw).getLastAccessTimestamp() : ((TtlValue<?>) raw).getUserValue();
            if (raw instanceof List) {
                List<Object> l = new ArrayList<>();
                for (Object x : (List<?>) raw) l.add(unwrap(x, stamps));
                return l;
            }
            if (raw instanceof Map && hasTtl(raw)) {
                Map<Object, Object> m = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) raw).entrySet()) m.put(e.getKey(), unwrap(e.getValue(), stamps));
                return m;
            }
            return raw;
        }

        static String label(Object key) {
            return String.valueOf(key);
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void open() throws Exception {
            super.open();
            if (spec.get("key_type") == null) return;
            KeyedStateBackend<K> kb = (KeyedStateBackend<K>) getKeyedStateBackend();
            for (Map<String, Object> s : list(spec, "keyed_state")) {
                String name = str(s, "name");
                String kind = str(s, "kind");
                boolean window = "TimeWindow".equals(s.getOrDefault("namespace", "VoidNamespace"));
                TypeSerializer ns = window ? new TimeWindow.Serializer() : VoidNamespaceSerializer.INSTANCE;
                StateDescriptor d = descriptor(s);
                kb.getOrCreateKeyedState(ns, d);
                record(id, kind, false, "keyed_state", name, "kind");
                record(id, window ? "TimeWindow" : "VoidNamespace", false, "keyed_state", name, "namespace");
                if (!window) {
                    ensure(id, new TreeMap<>(), "keyed_state", name, "values");
                    List<K> keys;
                    try (Stream<K> st = kb.getKeys(name, VoidNamespace.INSTANCE)) {
                        keys = st.collect(Collectors.toList());
                    }
                    for (K k : keys) {
                        setCurrentKey(k);
                        Object[] got = read(kind, (State) kb.getPartitionedState(VoidNamespace.INSTANCE, ns, d));
                        if (got == null) continue;
                        record(id, got[0], false, "keyed_state", name, "values", label(k));
                        if (got[1] != null) record(id, got[1], false, "keyed_state", name, "last_access", label(k));
                    }
                } else {
                    ensure(id, new ArrayList<>(), "keyed_state", name, "values");
                    List<Tuple2<K, Object>> kns;
                    try (Stream<Tuple2<K, Object>> st = kb.getKeysAndNamespaces(name)) {
                        kns = st.collect(Collectors.toList());
                    }
                    for (Tuple2<K, Object> kn : kns) {
                        setCurrentKey(kn.f0);
                        Object[] got = read(kind, (State) kb.getPartitionedState(kn.f1, ns, d));
                        if (got == null) continue;
                        Map<String, Object> e = new LinkedHashMap<>();
                        e.put("key", label(kn.f0));
                        e.put("window", window((TimeWindow) kn.f1));
                        e.put("value", got[0]);
                        if (got[1] != null) e.put("last_access", got[1]);
                        record(id, e, true, "keyed_state", name, "values");
                    }
                }
            }
            Map<String, Object> timers = (Map<String, Object>) spec.get("timers");
            if (timers != null) {
                String service = str(timers, "service");
                boolean window = "TimeWindow".equals(timers.getOrDefault("namespace", "VoidNamespace"));
                TypeSerializer ns = window ? new TimeWindow.Serializer() : VoidNamespaceSerializer.INSTANCE;
                InternalTimerService<Object> ts = getInternalTimerService(service, ns, this);
                String[][] kinds = {{"event_time", "event_"}, {"processing_time", "processing_"}};
                for (String[] kind : kinds) {
                    record(id, "_timer_state/" + kind[1] + service, false, "timers", kind[0], "state_name");
                    record(id, window ? "TimeWindow" : "VoidNamespace", false, "timers", kind[0], "namespace");
                    ensure(id, window ? new ArrayList<>() : new TreeMap<>(), "timers", kind[0], "values");
                }
                ensure(id, window ? new ArrayList<>() : new TreeMap<>(), "timers", "event_time", "fired");
                ts.forEachEventTimeTimer((n, t) -> timer("values", "event_time", getCurrentKey(), n, t));
                ts.forEachProcessingTimeTimer((n, t) -> timer("values", "processing_time", getCurrentKey(), n, t));
            }
        }

        static List<Object> window(TimeWindow w) {
            return java.util.Arrays.asList(w.getStart(), w.getEnd());
        }

        /** A timer: VoidNamespace ones as label -> sorted timestamps, window ones as {key, timestamp, window}. */
        @SuppressWarnings("unchecked")
        private void timer(String what, String kind, Object key, Object namespace, long ts) {
            synchronized (Declared.class) {
                if (namespace instanceof TimeWindow) {
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("key", label(key));
                    e.put("timestamp", ts);
                    e.put("window", window((TimeWindow) namespace));
                    record(id, e, true, "timers", kind, what);
                } else {
                    Map<String, Object> byKey = (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>) DUMP.get(id).get("timers")).get(kind)).get(what);
                    List<Object> l = (List<Object>) byKey.computeIfAbsent(label(key), k -> new ArrayList<>());
                    l.add(ts);
                    l.sort(null);
                }
            }
        }

        @Override
        public void onEventTime(InternalTimer<K, Object> t) {
            timer("fired", "event_time", t.getKey(), t.getNamespace(), t.getTimestamp());
        }

        @Override
        public void onProcessingTime(InternalTimer<K, Object> t) {}
    }
}
