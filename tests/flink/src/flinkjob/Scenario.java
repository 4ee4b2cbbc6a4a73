package flinkjob;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;

/** One run's knobs and the deterministic input they define (keys, events, broadcast rules). */
public final class Scenario implements Serializable {
    public static final String[] TYPES = {"click", "view", "buy"};
    public static final long BUCKET_MS = 10_000L;
    public static final long EVENT_SPACING_MS = 150L;
    public static final long WATERMARK_AT_SNAPSHOT = 30_000L;
    public static final long FINAL_WATERMARK = 1_000_000L;
    public static final long PROCESSING_TIMER_BASE = 4_102_444_800_000L;
    public static final long TTL_MS = 86_400_000L;
    static final String[] REGIONS = {"eu-west", "us-east", "ap-s\u00fcd", "sa"};
    static final String[] UNICODE = {"-\u00e9t\u00e9", "-\u20ac", "-\uD83D\uDE00"};

    public final Map<String, String> knobs;
    public final String mode;
    public final long seed;
    public final int numKeys;
    public final int numEvents;
    public final int partitions;
    public final long valueMax;
    public final String keyType;
    public final int maxParallelism;
    public final int parallelism;
    public final List<String> groups;
    public final String uidPrefix;
    public final List<String> noUid;  // knob no-uid: roles built without a uid (absent: none)
    public final String chainSplit;  // knob chain-split: the role that starts a new chain (absent: none)
    public final String pojoClass;
    public final String keySet;
    public final String backend;
    public final String format;
    public final String checkpoint;
    public final boolean compression;
    public final String inlineThreshold;
    public final String out;
    public final String restoreFrom;

    // Derived from the knobs, not serialized into the job graph (a million keys would be).
    private transient List<Object> keys;
    private transient List<String> labels;
    private transient Map<Object, Integer> indexOfKey;

    public Scenario(Map<String, String> knobs) {
        this.knobs = new LinkedHashMap<>(knobs);
        mode = get("mode", "savepoint");
        boolean size = mode.equals("size");
        seed = Long.parseLong(get("seed", "8675309"));
        numKeys = Integer.parseInt(get("keys", "30"));
        numEvents = Integer.parseInt(get("events", size ? get("keys", "30") : "480"));
        partitions = Integer.parseInt(get("partitions", "6"));
        valueMax = Long.parseLong(get("value-max", "5000"));
        keyType = get("key-type", size ? "string" : "long");
        maxParallelism = Integer.parseInt(get("max-parallelism", "128"));
        parallelism = Integer.parseInt(get("parallelism", "2"));
        String states = get("states", "all");
        groups = states.equals("all") ? Arrays.asList("base", "scalars", "composite", "ttl")
                : new ArrayList<>(Arrays.asList(("base," + states).split(",")));
        uidPrefix = get("uid-prefix", "");
        noUid = knobs.containsKey("no-uid") ? Arrays.asList(knobs.get("no-uid").split(",")) : new ArrayList<>();
        chainSplit = knobs.get("chain-split");
        pojoClass = get("pojo-class", "flinkjob.Profile");
        keySet = get("key-set", "job");
        backend = get("backend", "hashmap");
        format = get("format", "canonical").toUpperCase();
        checkpoint = get("checkpoint", "none");
        compression = Boolean.parseBoolean(get("compression", "false"));
        inlineThreshold = get("inline-threshold", "default");
        out = get("out", null);
        restoreFrom = get("restore-from", null);
        if (out == null) throw new IllegalArgumentException("out=DIR is required");
    }

    /** The typed key of each key index (built on first use in each copy of the scenario). */
    public synchronized List<Object> keys() {
        if (keys == null) buildKeys();
        return keys;
    }

    public List<String> labels() {
        keys();
        return labels;
    }

    public Map<Object, Integer> indexOfKey() {
        keys();
        return indexOfKey;
    }

    private void buildKeys() {
        List<Object> k = new ArrayList<>(numKeys);
        List<String> l = new ArrayList<>(numKeys);
        Map<Object, Integer> idx = new HashMap<>();
        for (int i = 0; i < numKeys; i++) {
            Object key = mode.equals("size") ? String.format("user-%07d", i) : makeKey(i);
            k.add(key);
            l.add(label(key));
            idx.put(key, i);
        }
        if (idx.size() != numKeys) throw new IllegalStateException("duplicate keys");
        labels = l;
        indexOfKey = idx;
        keys = k;
    }

    private String get(String name, String dflt) {
        String v = knobs.get(name);
        if (v == null && dflt != null) knobs.put(name, dflt);
        return v == null ? dflt : v;
    }

    public boolean has(String group) {
        return groups.contains(group);
    }

    public String uid(String role) {
        return uidPrefix + role;
    }

    private Object makeKey(int i) {
        switch (keyType) {
            case "long": {
                long[] special = {0L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, 9007199254740993L};
                if (i < special.length) return special[i];
                if (keySet.equals("fixtures")) return (i * 1_000_000_000L + 12_345 + 7L * i) * (i % 2 == 0 ? 1 : -1);
                long v = (i * 1_000_003L + 7) * (i % 2 == 0 ? 1 : -1) * 5003L;
                return v;
            }
            case "int": {
                int[] special = {0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 65536};
                if (i < special.length) return special[i];
                if (keySet.equals("fixtures")) return (i * 100_000 + 17 + 3 * i) * (i % 2 == 0 ? 1 : -1);
                return (i * 100_003 + 11) * (i % 2 == 0 ? 1 : -1);
            }
            case "string":
                return String.format("user-%03d", i) + (i % 5 == 4 ? UNICODE[(i / 5) % UNICODE.length] : "");
            case "tuple":
                return Tuple2.of(REGIONS[i % REGIONS.length], (i / REGIONS.length) * 7 - 3);
            default:
                throw new IllegalArgumentException("key-type must be long, int, string or tuple: " + keyType);
        }
    }

    /** How expected.json names a key: a String itself, a number in decimal, a Tuple2 as (f0,f1). */
    public static String label(Object key) {
        return key.toString();
    }

    @SuppressWarnings("unchecked")
    public <K> TypeInformation<K> keyTypeInfo() {
        switch (keyType) {
            case "long": return (TypeInformation<K>) Types.LONG;
            case "int": return (TypeInformation<K>) Types.INT;
            case "string": return (TypeInformation<K>) Types.STRING;
            default: return (TypeInformation<K>) Types.TUPLE(Types.STRING, Types.INT);
        }
    }

    public String keyTypeDescription() {
        switch (keyType) {
            case "long": return "Long (LongSerializer)";
            case "int": return "Integer (IntSerializer)";
            case "string": return "String (StringSerializer)";
            default: return "Tuple2<String,Integer> (TupleSerializer: StringSerializer, IntSerializer)";
        }
    }

    /** JSON form of a typed key (Tuple2 as [f0, f1]). */
    public static Object keyJson(Object key) {
        if (key instanceof Tuple2) {
            Tuple2<?, ?> t = (Tuple2<?, ?>) key;
            return Arrays.asList(t.f0, t.f1);
        }
        return key;
    }

    public int partitionOf(int keyIndex) {
        return keyIndex % partitions;
    }

    public int sourceSubtaskOf(int keyIndex) {
        return partitionOf(keyIndex) % parallelism;
    }

    /** The input: record seq has event time seq * 150 ms; key index, value and type drawn in that order. */
    public List<Event> events() {
        List<Event> events = new ArrayList<>(numEvents);
        if (mode.equals("size")) {
            for (int i = 0; i < numKeys; i++) events.add(new Event(i, i, i, "click", false));
            return events;
        }
        Random r = new Random(seed);
        for (int seq = 0; seq < numEvents; seq++) {
            int k = r.nextInt(numKeys);
            long value = 1 + (long) r.nextInt((int) valueMax);
            String type = TYPES[r.nextInt(TYPES.length)];
            events.add(new Event(seq, k, value, type, false));
        }
        return events;
    }

    public static long timestampOf(long seq) {
        return seq * EVENT_SPACING_MS;
    }

    public static long bucketStart(long ts) {
        return Math.floorDiv(ts, BUCKET_MS) * BUCKET_MS;
    }

    public static long eventTimer(long ts) {
        return bucketStart(ts) + BUCKET_MS + 500;
    }

    public static long processingTimer(int keyIndex, boolean buy) {
        return PROCESSING_TIMER_BASE + keyIndex * 1000L + (buy ? 500 : 0);
    }

    /** The collections group's `recent`: the last three values, oldest first (a new list each time). */
    public static List<Long> recent(List<Long> before, long value) {
        List<Long> l = before == null ? new ArrayList<>() : new ArrayList<>(before);
        l.add(value);
        while (l.size() > 3) l.remove(0);
        return l;
    }

    /** Ten broadcast messages: seven puts, one overwrite, one put-then-remove. */
    public static List<String[]> rules() {
        return Arrays.asList(
                new String[] {"put", "type:click", "engagement"},
                new String[] {"put", "type:view", "impression"},
                new String[] {"put", "tier:gold", "2"},
                new String[] {"put", "type:buy", "revenue"},
                new String[] {"put", "region:eu", "europe"},
                new String[] {"put", "tmp:scratch", "x"},
                new String[] {"put", "region:us", "americas"},
                new String[] {"put", "tier:gold", "3"},
                new String[] {"remove", "tmp:scratch", ""},
                new String[] {"put", "tier:silver", "2"});
    }
}
