package flinkjob;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * A plain-Java model of the job, independent of Flink's state: the state it holds once every event
 * is processed and the watermark 30 000 has fired what it fires. Written out as expected.json.
 */
public final class Model {
    private Model() {}

    static final String STATE = "org.apache.flink.api.common.typeutils.base.";
    static final String TUPLE = "org.apache.flink.api.java.typeutils.runtime.";

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    public static Map<String, Object> profileJson(int hits, String name, long total) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("hits", hits);
        m.put("name", name);
        m.put("total", total);
        return m;
    }

    /** One key's state, updated event by event as proc does. */
    static final class KeyState {
        Long count;
        final List<Object> events = new ArrayList<>();
        final Map<String, Object> attrs = new TreeMap<>();
        Long sum;
        long avgSum, avgCount;
        Double ratio;
        Boolean flag;
        String lastType;
        final List<Object> values = new ArrayList<>();
        final Map<Long, String> byBucket = new TreeMap<>();
        List<Object> last;
        int hits;
        String name;
        long total;
        boolean hasProfile;
        String ttlLast;
        final Map<String, Object> ttlSeen = new TreeMap<>();
        List<Long> recent;
        final Map<String, Object> typeCounts = new TreeMap<>();
        final List<Object> marks = new ArrayList<>();
        final TreeSet<Long> eventTimers = new TreeSet<>();
        final List<Long> fired = new ArrayList<>();
        final TreeSet<Long> processingTimers = new TreeSet<>();
        final Map<Long, Long> windows = new TreeMap<>();

        void bump(Map<String, Object> m, String k) {
            Object v = m.get(k);
            m.put(k, (v == null ? 0L : (Long) v) + 1);
        }
    }

    public static Map<String, Object> expected(Scenario sc, Map<String, Object> run, Map<String, String> names) {
        if (sc.mode.equals("size")) return sizeExpected(sc, run, names);
        Map<String, String> rules = new TreeMap<>();
        for (String[] r : Scenario.rules()) {
            if (r[0].equals("put")) rules.put(r[1], r[2]);
            else rules.remove(r[1]);
        }
        List<Event> events = sc.events();
        List<KeyState> ks = new ArrayList<>();
        for (int i = 0; i < sc.numKeys; i++) ks.add(new KeyState());
        long[] perSubEvents = new long[sc.parallelism];
        long[] perSubSum = new long[sc.parallelism];
        long[] perSubMax = new long[sc.parallelism];
        Arrays.fill(perSubMax, -1);
        long[] perPartition = new long[sc.partitions];
        for (Event e : events) {
            int s = sc.sourceSubtaskOf(e.keyIndex);
            perSubEvents[s]++;
            perSubSum[s] += e.value;
            perSubMax[s] = Math.max(perSubMax[s], e.seq);
            perPartition[sc.partitionOf(e.keyIndex)]++;
            String label = rules.get("type:" + e.type);
            KeyState k = ks.get(e.keyIndex);
            long ts = Scenario.timestampOf(e.seq);
            k.count = k.count == null ? 1 : k.count + 1;
            k.events.add(e.seq + ":" + e.type + ":" + e.value);
            k.bump(k.attrs, "type:" + e.type);
            k.bump(k.attrs, "label:" + label);
            Object mx = k.attrs.get("max_value");
            k.attrs.put("max_value", mx == null ? e.value : Math.max((Long) mx, e.value));
            k.attrs.put("last_seq", e.seq);
            k.sum = k.sum == null ? e.value : k.sum + e.value;
            k.avgSum += e.value;
            k.avgCount++;
            k.eventTimers.add(Scenario.eventTimer(ts));
            k.processingTimers.add(Scenario.processingTimer(e.keyIndex, false));
            if (e.type.equals("buy")) k.processingTimers.add(Scenario.processingTimer(e.keyIndex, true));
            k.ratio = e.value / 7.0;
            k.flag = e.type.equals("buy");
            k.lastType = e.type + "/" + label;
            k.values.add(e.value);
            long b = Scenario.bucketStart(ts);
            String prev = k.byBucket.get(b);
            k.byBucket.put(b, prev == null ? e.type : prev + "," + e.type);
            k.last = Arrays.asList(e.type, e.value);
            k.hasProfile = true;
            k.hits++;
            k.total += e.value;
            k.name = e.type.equals("view") ? null : sc.labels().get(e.keyIndex) + "/" + label;
            k.ttlLast = label + "@" + e.seq;
            k.bump(k.ttlSeen, e.type);
            k.recent = Scenario.recent(k.recent, e.value);
            Object tc = k.typeCounts.get(e.type);
            k.typeCounts.put(e.type, tc == null ? 1 : (Integer) tc + 1);
            k.marks.add(Arrays.asList((int) e.seq, e.type.equals("buy")));
            k.windows.merge(b, e.value, Long::sum);
        }
        long wm = Scenario.WATERMARK_AT_SNAPSHOT;
        for (int i = 0; i < sc.numKeys; i++) {
            KeyState k = ks.get(i);
            while (!k.eventTimers.isEmpty() && k.eventTimers.first() <= wm) {
                long t = k.eventTimers.pollFirst();
                k.fired.add(t);
                k.bump(k.attrs, "fired_timers");
                k.attrs.put("last_fired", t);
                if (i % 5 == 0) k.sum = null;
            }
            k.windows.keySet().removeIf(start -> start + Scenario.BUCKET_MS - 1 <= wm);
        }

        Map<String, Object> out = new LinkedHashMap<>(run);
        out.put("parallelism", sc.parallelism);
        out.put("max_parallelism", sc.maxParallelism);
        out.put("key_group_prefix_bytes", sc.maxParallelism > 128 ? 2 : 1);
        out.put("watermark_at_savepoint", wm);
        out.put("scenario", scenarioJson(sc, run));
        Map<String, Object> keys = new TreeMap<>();
        for (int i = 0; i < sc.numKeys; i++) {
            Object key = sc.keys().get(i);
            int kg = KeyGroupRangeAssignment.assignToKeyGroup(key, sc.maxParallelism);
            keys.put(sc.labels().get(i), obj("key", Scenario.keyJson(key), "key_index", i, "key_group", kg,
                    "subtask", KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(sc.maxParallelism, sc.parallelism, kg),
                    "source_subtask", sc.sourceSubtaskOf(i)));
        }
        out.put("keys", keys);
        out.put("key_group_range_per_subtask", rangesJson(sc));

        Map<String, Object> ops = new LinkedHashMap<>();
        Map<String, Object> offsets = new TreeMap<>();
        Map<String, Object> union = new TreeMap<>();
        Map<String, Object> bcast = new TreeMap<>();
        for (int s = 0; s < sc.parallelism; s++) {
            List<Object> off = new ArrayList<>();
            for (int p = 0; p < sc.partitions; p++) if (p % sc.parallelism == s) off.add(perPartition[p]);
            offsets.put(String.valueOf(s), off);
            union.put(String.valueOf(s), new ArrayList<Object>(Operators.UnionOp.entries(s, perSubEvents[s], perSubSum[s], perSubMax[s])));
            bcast.put(String.valueOf(s), new TreeMap<String, Object>(rules));
        }
        Map<String, Object> src = operator(sc, "src", names, sc.parallelism);
        src.put("operator_state", obj("offsets", obj("distribution", "SPLIT_DISTRIBUTE", "element_type", "Long (LongSerializer)",
                "subtasks", offsets, "note", "events emitted per owned partition; subtask s owns partitions {p : p % " + sc.parallelism + " == s} in ascending order")));
        ops.put(sc.uid("src"), src);
        Map<String, Object> rulesSrc = operator(sc, "rules-src", names, 1);
        rulesSrc.put("stateless", true);
        ops.put(sc.uid("rules-src"), rulesSrc);
        Map<String, Object> u = operator(sc, "union-op", names, sc.parallelism);
        u.put("operator_state", obj("union-counts", obj("distribution", "UNION", "element_type", "String (StringSerializer)",
                "subtasks", union, "note", "each subtask writes only its own entries; on restore every subtask gets the union")));
        ops.put(sc.uid("union-op"), u);
        Map<String, Object> b = operator(sc, "bcast", names, sc.parallelism);
        b.put("broadcast_state", obj("rules", obj("distribution", "BROADCAST", "key_type", "String (StringSerializer)",
                "value_type", "String (StringSerializer)", "subtasks", bcast)));
        ops.put(sc.uid("bcast"), b);
        ops.put(sc.uid("proc"), proc(sc, ks, names, run));
        ops.put(sc.uid("win"), win(sc, ks, names));
        Map<String, Object> snk = operator(sc, "snk", names, sc.parallelism);
        snk.put("stateless", true);
        ops.put(sc.uid("snk"), snk);
        out.put("operators", ops);
        return out;
    }

    static Map<String, Object> scenarioJson(Scenario sc, Map<String, Object> run) {
        return obj("knobs", new TreeMap<>(sc.knobs), "seed", sc.seed, "keys", sc.numKeys, "events", sc.numEvents,
                "partitions", sc.partitions, "value_range", Arrays.asList(1, sc.valueMax), "key_type", sc.keyTypeDescription(),
                "key_label", "every key is named in this file by its label: a String key is itself, a Long/Integer key its decimal form, a Tuple2 key \"(f0,f1)\" (Tuple2.toString()); \"keys\" gives each label's typed key as JSON (Tuple2: [f0, f1])",
                "uid_prefix", sc.uidPrefix, "state_groups", sc.groups, "produce_wall_clock_ms", run.get("produce_wall_clock_ms"));
    }

    static Map<String, Object> rangesJson(Scenario sc) {
        Map<String, Object> r = new TreeMap<>();
        for (int s = 0; s < sc.parallelism; s++) {
            KeyGroupRange g = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(sc.maxParallelism, sc.parallelism, s);
            r.put(String.valueOf(s), Arrays.asList(g.getStartKeyGroup(), g.getEndKeyGroup()));
        }
        return r;
    }

    static Map<String, Object> operator(Scenario sc, String role, Map<String, String> names, int parallelism) {
        return obj("uid", sc.uid(role), "role", role, "name", names.get(role), "parallelism", parallelism,
                "max_parallelism", sc.maxParallelism);
    }

    static Map<String, Object> state(String kind, String types, Map<String, Object> values, String serializer, String snapshot) {
        return obj("kind", kind, "namespace", "VoidNamespace", "types", types, "values", values,
                "state_serializer", serializer, "serializer_snapshot", snapshot);
    }

    static Map<String, Object> proc(Scenario sc, List<KeyState> ks, Map<String, String> names, Map<String, Object> run) {
        Map<String, Object> p = operator(sc, "proc", names, sc.parallelism);
        p.put("key_type", sc.keyTypeDescription());
        String[] names14 = {"count", "events", "attrs", "sum", "avg", "ratio", "flag", "last_type", "values", "by_bucket", "last", "profile", "ttl_last", "ttl_seen", "recent", "type_counts", "marks", "kryo"};
        Map<String, Map<String, Object>> v = new LinkedHashMap<>();
        for (String n : names14) v.put(n, new TreeMap<>());
        Map<String, Object> bounds1 = new TreeMap<>(), bounds2 = new TreeMap<>();
        Map<String, Object> timersEv = new TreeMap<>(), firedEv = new TreeMap<>(), timersProc = new TreeMap<>();
        List<Object> wall = Arrays.asList(run.get("ttl_lo"), run.get("ttl_hi"));
        for (int i = 0; i < ks.size(); i++) {
            KeyState k = ks.get(i);
            if (k.count == null) continue;
            String l = sc.labels().get(i);
            v.get("count").put(l, k.count);
            v.get("events").put(l, k.events);
            v.get("attrs").put(l, k.attrs);
            if (k.sum != null) v.get("sum").put(l, k.sum);
            v.get("avg").put(l, obj("accumulator", Arrays.asList(k.avgSum, k.avgCount), "result", (double) k.avgSum / k.avgCount));
            v.get("ratio").put(l, k.ratio);
            v.get("flag").put(l, k.flag);
            v.get("last_type").put(l, k.lastType);
            v.get("values").put(l, k.values);
            Map<String, Object> bb = new LinkedHashMap<>();
            for (Map.Entry<Long, String> e : k.byBucket.entrySet()) bb.put(String.valueOf(e.getKey()), e.getValue());
            v.get("by_bucket").put(l, bb);
            v.get("last").put(l, k.last);
            v.get("profile").put(l, profileJson(k.hits, k.name, k.total));
            v.get("ttl_last").put(l, k.ttlLast);
            v.get("ttl_seen").put(l, k.ttlSeen);
            v.get("recent").put(l, new ArrayList<Object>(k.recent));
            v.get("type_counts").put(l, k.typeCounts);
            v.get("marks").put(l, k.marks);
            v.get("kryo").put(l, Arrays.asList(k.last.get(0), k.total));
            bounds1.put(l, wall);
            Map<String, Object> b2 = new TreeMap<>();
            for (String t : k.ttlSeen.keySet()) b2.put(t, wall);
            bounds2.put(l, b2);
            if (!k.eventTimers.isEmpty()) timersEv.put(l, new ArrayList<>(k.eventTimers));
            if (!k.fired.isEmpty()) firedEv.put(l, k.fired);
            timersProc.put(l, new ArrayList<>(k.processingTimers));
        }
        Map<String, Object> st = new LinkedHashMap<>();
        st.put("count", state("VALUE", "Long (LongSerializer)", v.get("count"), STATE + "LongSerializer", STATE + "LongSerializer$LongSerializerSnapshot"));
        st.put("events", state("LIST", "element String (StringSerializer); entry = seq:type:value", v.get("events"), STATE + "ListSerializer", STATE + "ListSerializerSnapshot"));
        st.put("attrs", state("MAP", "user key String, user value Long", v.get("attrs"), STATE + "MapSerializer", STATE + "MapSerializerSnapshot"));
        st.put("sum", state("REDUCING", "Long (LongSerializer); absent for keys with key index % 5 == 0 once a timer fired (cleared)", v.get("sum"), STATE + "LongSerializer", STATE + "LongSerializer$LongSerializerSnapshot"));
        st.put("avg", state("AGGREGATING", "stored accumulator Tuple2<Long,Long> (TupleSerializer: f0 = sum, f1 = count); result Double = f0 / f1 (not stored)", v.get("avg"), TUPLE + "TupleSerializer", TUPLE + "TupleSerializerSnapshot"));
        if (sc.has("scalars")) {
            st.put("ratio", state("VALUE", "Double (DoubleSerializer) = value / 7.0 of the last event", v.get("ratio"), STATE + "DoubleSerializer", STATE + "DoubleSerializer$DoubleSerializerSnapshot"));
            st.put("flag", state("VALUE", "Boolean (BooleanSerializer) = the last event was a buy", v.get("flag"), STATE + "BooleanSerializer", STATE + "BooleanSerializer$BooleanSerializerSnapshot"));
            st.put("last_type", state("VALUE", "String (StringSerializer) = type/label of the last event", v.get("last_type"), STATE + "StringSerializer", STATE + "StringSerializer$StringSerializerSnapshot"));
            st.put("values", state("LIST", "element Long (LongSerializer); every event's value, in order", v.get("values"), STATE + "ListSerializer", STATE + "ListSerializerSnapshot"));
            st.put("by_bucket", state("MAP", "user key Long (LongSerializer) = start of a 10 s event-time bucket (a decimal string in this JSON), user value String (StringSerializer) = the types of the bucket's events, comma-separated, in order", v.get("by_bucket"), STATE + "MapSerializer", STATE + "MapSerializerSnapshot"));
        }
        if (sc.has("composite")) {
            st.put("last", state("VALUE", "Tuple2<String,Long> (TupleSerializer: StringSerializer, LongSerializer) = (type, value) of the last event; JSON [f0, f1]", v.get("last"), TUPLE + "TupleSerializer", TUPLE + "TupleSerializerSnapshot"));
            st.put("profile", state("VALUE", "POJO " + sc.pojoClass + " (PojoSerializer; fields in name order: hits int (IntSerializer), name String (StringSerializer, nullable), total long (LongSerializer)); hits = events, total = sum of values, name = key/label of the last event, null when the last event was a view", v.get("profile"), TUPLE + "PojoSerializer", TUPLE + "PojoSerializerSnapshot"));
        }
        if (sc.has("ttl")) {
            Map<String, Object> ttl = obj("ttl_ms", Scenario.TTL_MS, "update_type", "OnCreateAndWrite", "state_visibility", "NeverReturnExpired", "time_characteristic", "ProcessingTime");
            String note = "observed, not modelled: the stored last-access timestamp t satisfies lo <= t <= hi (the wall clock from before the first event to after the last one)";
            Map<String, Object> tl = state("VALUE", "String (StringSerializer) = label@seq of the last event; TTL on: each stored value is a TtlValue written by TtlStateFactory$TtlSerializer as the last-access timestamp (long, epoch ms, processing time) followed by the user value", v.get("ttl_last"), "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer", "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot");
            tl.put("ttl", ttl);
            tl.put("timestamps", obj("note", note, "bounds", bounds1));
            st.put("ttl_last", tl);
            Map<String, Object> ts = state("MAP", "user key String (StringSerializer) = event type, user value Long (LongSerializer) = its count; TTL on: each map value is a TtlValue written by TtlStateFactory$TtlSerializer as the last-access timestamp (long, epoch ms, processing time) followed by the user value", v.get("ttl_seen"), STATE + "MapSerializer", STATE + "MapSerializerSnapshot");
            ts.put("ttl", ttl);
            ts.put("timestamps", obj("note", note, "bounds", bounds2));
            st.put("ttl_seen", ts);
        }
        if (sc.has("collections")) {
            st.put("recent", state("VALUE", "List<Long> (ListSerializer: LongSerializer) = the last three values, oldest first", v.get("recent"), STATE + "ListSerializer", STATE + "ListSerializerSnapshot"));
            st.put("type_counts", state("VALUE", "Map<String,Integer> (MapSerializer: StringSerializer, IntSerializer) = events per type", v.get("type_counts"), STATE + "MapSerializer", STATE + "MapSerializerSnapshot"));
            st.put("marks", state("LIST", "element Tuple2<Integer,Boolean> (TupleSerializer: IntSerializer, BooleanSerializer) = (seq, buy) of every event; JSON [f0, f1]", v.get("marks"), STATE + "ListSerializer", STATE + "ListSerializerSnapshot"));
        }
        if (sc.has("kryo")) {
            st.put("kryo", state("VALUE", "flinkjob.KryoBox (KryoSerializer: a GenericTypeInfo) = [type of the last event, sum of values]", v.get("kryo"), TUPLE + "kryo.KryoSerializer", TUPLE + "kryo.KryoSerializerSnapshot"));
        }
        p.put("keyed_state", st);
        p.put("timers", obj(
                "event_time", obj("state_name", "_timer_state/event_user-timers", "namespace", "VoidNamespace", "values", timersEv, "already_fired_before_savepoint", firedEv),
                "processing_time", obj("state_name", "_timer_state/processing_user-timers", "namespace", "VoidNamespace", "values", timersProc)));
        return p;
    }

    static Map<String, Object> win(Scenario sc, List<KeyState> ks, Map<String, String> names) {
        Map<String, Object> w = operator(sc, "win", names, sc.parallelism);
        w.put("key_type", sc.keyTypeDescription());
        w.put("window", "TumblingEventTimeWindows 10000 ms, reduce (sum of f1), allowed lateness 0");
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < ks.size(); i++) order.add(i);
        order.sort((a, b) -> sc.labels().get(a).compareTo(sc.labels().get(b)));
        List<Object> contents = new ArrayList<>(), timers = new ArrayList<>();
        for (int i : order) {
            for (Map.Entry<Long, Long> e : ks.get(i).windows.entrySet()) {
                List<Object> window = Arrays.asList(e.getKey(), e.getKey() + Scenario.BUCKET_MS);
                contents.add(obj("key", sc.labels().get(i), "window", window, "value", Arrays.asList(Scenario.keyJson(sc.keys().get(i)), e.getValue())));
                timers.add(obj("key", sc.labels().get(i), "timestamp", e.getKey() + Scenario.BUCKET_MS - 1, "window", window));
            }
        }
        w.put("keyed_state", obj("window-contents", obj("kind", "REDUCING",
                "namespace", "TimeWindow (TimeWindow.Serializer: start long, end long; end exclusive)",
                "types", "Tuple2<key,Long> (TupleSerializer: the key's serializer, LongSerializer); f0 = the key",
                "values", contents, "state_serializer", TUPLE + "TupleSerializer", "serializer_snapshot", TUPLE + "TupleSerializerSnapshot")));
        w.put("timers", obj(
                "event_time", obj("state_name", "_timer_state/event_window-timers", "namespace", "TimeWindow", "values", timers),
                "processing_time", obj("state_name", "_timer_state/processing_window-timers", "namespace", "TimeWindow", "values", new ArrayList<>(), "note", "registered by the window operator, always empty here")));
        return w;
    }

    /** Size mode: too many keys to list; the rule that gives every key's state, and totals to check a reader. */
    static Map<String, Object> sizeExpected(Scenario sc, Map<String, Object> run, Map<String, String> names) {
        Map<String, Object> out = new LinkedHashMap<>(run);
        out.put("parallelism", sc.parallelism);
        out.put("max_parallelism", sc.maxParallelism);
        out.put("key_group_prefix_bytes", sc.maxParallelism > 128 ? 2 : 1);
        out.put("scenario", scenarioJson(sc, run));
        out.put("key_group_range_per_subtask", rangesJson(sc));
        long n = sc.numKeys;
        out.put("size", obj("keys", n, "key_format", "user-%07d (key index i, 0 <= i < keys)",
                "count", "Long = i", "events", "List<String> = [label, decimal i]",
                "count_sum", n * (n - 1) / 2, "events_elements", 2 * n));
        Map<String, Object> ops = new LinkedHashMap<>();
        Map<String, Object> src = operator(sc, "src", names, sc.parallelism);
        src.put("stateless", true);
        ops.put(sc.uid("src"), src);
        Map<String, Object> p = operator(sc, "proc", names, sc.parallelism);
        p.put("key_type", sc.keyTypeDescription());
        p.put("keyed_state", obj(
                "count", obj("kind", "VALUE", "namespace", "VoidNamespace", "types", "Long (LongSerializer)", "state_serializer", STATE + "LongSerializer", "serializer_snapshot", STATE + "LongSerializer$LongSerializerSnapshot"),
                "events", obj("kind", "LIST", "namespace", "VoidNamespace", "types", "element String (StringSerializer)", "state_serializer", STATE + "ListSerializer", "serializer_snapshot", STATE + "ListSerializerSnapshot")));
        ops.put(sc.uid("proc"), p);
        out.put("operators", ops);
        return out;
    }
}
