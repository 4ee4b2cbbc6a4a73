package kryoprobe;

import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.URI;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.*;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Writes values with Flink's own KryoSerializer, so the suite can check statectl's Kryo decoder
 * against the bytes a given Flink release writes.
 *
 *   java kryoprobe.KryoProbe table          registrations by id: id, class, serializer class
 *   java kryoprobe.KryoProbe samples        one line per sample: name, declared class, snapshot hex, value hex
 */
public final class KryoProbe {

    public enum Level { LOW, MID, HIGH }

    /** Final, no no-argument constructor, private fields of every primitive kind. */
    public static final class Device {
        private final String model;
        private final String os;
        private final int screenWidth;
        private final long lastSeen;
        private final double score;
        private final boolean active;
        private final short shortField;
        private final byte byteField;
        private final char charField;
        private final float floatField;
        private transient int cache = 7;
        private static int created = 0;

        public Device(String model, String os, int screenWidth, long lastSeen, double score, boolean active) {
            this.model = model; this.os = os; this.screenWidth = screenWidth; this.lastSeen = lastSeen;
            this.score = score; this.active = active;
            this.shortField = (short) -3; this.byteField = (byte) 5; this.charField = 'Z'; this.floatField = 1.5f;
            created++;
        }
    }

    /** A superclass's fields are written with the subclass's, sorted together by name. */
    public abstract static class Base {
        String id;
        Integer boxed;
    }

    public static final class Child extends Base {
        int level;
        String zeta;
        Level tier;
    }

    /** Public non-final fields of a public class: Kryo may use generated accessors for these. */
    public static class PublicFields {
        public String name;
        public int count;
        public long total;
    }

    /** An object that holds itself. */
    public static final class Ring {
        String name;
        Ring next;
    }

    /** Two fields that may hold one object: the second is then a back reference. */
    public static final class Twin {
        Device left;
        Device right;
        String label;
        UUID id;
        Level level;
        Long boxed;
    }

    /** Strings of every length Kryo writes differently, and numbers at their edges (the encoder's checks). */
    public static final class Texts {
        String one, two, s32, s33, s63, s64, s200, accented, astral, empty, none;
        int small, negative;
        long big, least;
        char letter;
        short tiny;
        float ratio;
        Integer boxed, boxedNull;
        Level level;
    }

    static Texts texts(boolean edge) {
        Texts t = new Texts();
        t.one = "a"; t.two = "ab"; t.s32 = "x".repeat(32); t.s33 = "y".repeat(33); t.s63 = "z".repeat(63);
        t.s64 = "w".repeat(64); t.s200 = "v".repeat(200); t.accented = "caf\u00e9"; t.astral = "\uD83D\uDE00!";
        t.empty = ""; t.none = null;
        t.small = edge ? Integer.MIN_VALUE : 5; t.negative = edge ? Integer.MAX_VALUE : -70000;
        t.big = edge ? Long.MIN_VALUE : 1L << 60; t.least = edge ? Long.MAX_VALUE : -3L;
        t.letter = edge ? '\u20ac' : 'q'; t.tiny = edge ? Short.MIN_VALUE : 300; t.ratio = edge ? Float.NaN : -2.5f;
        t.boxed = edge ? -1 : 1_000_000; t.boxedNull = null; t.level = edge ? null : Level.MID;
        return t;
    }

    /** The benchmark's Kryo class: five fields, a UUID and a list of strings among them. */
    public static final class BenchUser {
        UUID id;
        String name;
        long count;
        int level;
        List<String> tags;
    }

    /** The same values as a POJO Flink serializes field by field itself. */
    public static class BenchPojo {
        public String id;
        public String name;
        public long count;
        public int level;
        public String[] tags;
    }

    /** Fields of the kinds Kryo's own serializers write. */
    public static final class Holder {
        Object anything;
        List<String> tags;
        Map<String, Integer> counts;
        UUID uuid;
        Optional<String> opt;
        Optional<String> empty;
        BigDecimal dec;
        BigInteger big;
        LocalDate date;
        LocalDateTime dateTime;
        Instant instant;
        int[] ints;
        String[] strs;
        Level level;
        Set<String> set;
        Locale locale;
        URI uri;
        BitSet bits;
        Date when;
        List<Integer> asList;
        List<String> unmodifiable;
        List<String> emptyList;
        Device first;
        Device second;
        Long nullLong;
        String nullString;
        Map<String, List<Long>> nested;
    }

    private static Holder holder() {
        Holder h = new Holder();
        h.anything = new Child();
        ((Child) h.anything).id = "c-1"; ((Child) h.anything).boxed = 42; ((Child) h.anything).level = 3;
        ((Child) h.anything).zeta = "z"; ((Child) h.anything).tier = Level.MID;
        h.tags = new ArrayList<>(Arrays.asList("a", "bb", "ccc"));
        h.counts = new TreeMap<>(); h.counts.put("x", 1); h.counts.put("y", -2);
        h.uuid = new UUID(0x0123456789abcdefL, 0xfedcba9876543210L);
        h.opt = Optional.of("SAVE9"); h.empty = Optional.empty();
        h.dec = new BigDecimal("-12345.678"); h.big = new BigInteger("123456789012345678901234567890");
        h.date = LocalDate.of(2024, 11, 3); h.dateTime = LocalDateTime.of(2024, 11, 3, 4, 5, 6, 7000);
        h.instant = Instant.ofEpochSecond(1750000000L, 123456789);
        h.ints = new int[] {1, -1, 300}; h.strs = new String[] {"p", null, "q"};
        h.level = Level.HIGH;
        h.set = new LinkedHashSet<>(Arrays.asList("s1", "s2"));
        h.locale = new Locale("de", "CH"); h.uri = URI.create("https://example.com/a?b=1");
        h.bits = new BitSet(); h.bits.set(1); h.bits.set(70);
        h.when = new Date(1750000000123L);
        h.asList = Arrays.asList(5, 6);
        h.unmodifiable = Collections.unmodifiableList(new ArrayList<>(Arrays.asList("u")));
        h.emptyList = Collections.emptyList();
        h.first = new Device("Pixel 8", "android-15", 1080, 1750000000000L, 0.25, true);
        h.second = h.first;
        h.nested = new HashMap<>(); h.nested.put("k", new ArrayList<>(Arrays.asList(1L, 2L)));
        return h;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static TypeSerializer<Object> kryo(Class<?> type, List<Class<?>> registered) throws Exception {
        ExecutionConfig config = new ExecutionConfig();
        Object target = config;
        try {
            target = ExecutionConfig.class.getMethod("getSerializerConfig").invoke(config);
        } catch (NoSuchMethodException e) {
            // Flink 1.17: registrations live on the ExecutionConfig itself
        }
        for (Class<?> c : registered) {
            target.getClass().getMethod("registerKryoType", Class.class).invoke(target, c);
        }
        for (Constructor<?> c : KryoSerializer.class.getConstructors()) {
            Class<?>[] p = c.getParameterTypes();
            if (p.length == 2 && p[0] == Class.class && p[1].isInstance(target)) {
                return (TypeSerializer<Object>) c.newInstance(type, target);
            }
        }
        throw new IllegalStateException("no KryoSerializer constructor for " + target.getClass());
    }

    /** The serializer Flink picks for *type* (a POJO's PojoSerializer), on 1.x and 2.x alike. */
    @SuppressWarnings("unchecked")
    static TypeSerializer<Object> flinkSerializer(Class<?> type) throws Exception {
        Object info = org.apache.flink.api.common.typeinfo.TypeInformation.of(type);
        ExecutionConfig config = new ExecutionConfig();
        Object arg = config;
        try {
            arg = ExecutionConfig.class.getMethod("getSerializerConfig").invoke(config);
        } catch (NoSuchMethodException e) {
            // Flink 1.17: createSerializer takes the ExecutionConfig
        }
        for (java.lang.reflect.Method m : info.getClass().getMethods()) {
            if (m.getName().equals("createSerializer") && m.getParameterCount() == 1
                    && m.getParameterTypes()[0].isInstance(arg)) {
                return (TypeSerializer<Object>) m.invoke(info, arg);
            }
        }
        throw new IllegalStateException("no createSerializer for " + arg.getClass());
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static void sample(PrintStream out, String name, Class<?> type, List<Class<?>> registered, Object value)
            throws Exception {
        TypeSerializer<Object> ser = kryo(type, registered);
        DataOutputSerializer snap = new DataOutputSerializer(256);
        TypeSerializerSnapshot.writeVersionedSnapshot(snap, ser.snapshotConfiguration());
        DataOutputSerializer data = new DataOutputSerializer(256);
        ser.serialize(value, data);
        out.println(name + " " + type.getName() + " " + hex(snap.getCopyOfBuffer()) + " " + hex(data.getCopyOfBuffer()));
    }

    /** N values of each benchmark class: DIR/{kryo,pojo}.{bin,offsets,snapshot}. */
    static void bench(int n, java.nio.file.Path dir) throws Exception {
        Random random = new Random(4711);
        TypeSerializer<Object> kryo = kryo(BenchUser.class, List.of());
        TypeSerializer<Object> pojo = flinkSerializer(BenchPojo.class);
        DataOutputSerializer kOut = new DataOutputSerializer(1 << 20), pOut = new DataOutputSerializer(1 << 20);
        java.nio.ByteBuffer kOff = java.nio.ByteBuffer.allocate(8 * (n + 1)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        java.nio.ByteBuffer pOff = java.nio.ByteBuffer.allocate(8 * (n + 1)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            BenchUser u = new BenchUser();
            u.id = new UUID(random.nextLong(), random.nextLong());
            u.name = "user-" + i;
            u.count = random.nextInt(1_000_000);
            u.level = random.nextInt(10);
            u.tags = new ArrayList<>(Arrays.asList("t" + random.nextInt(50), "segment-" + random.nextInt(7), "eu"));
            BenchPojo p = new BenchPojo();
            p.id = u.id.toString(); p.name = u.name; p.count = u.count; p.level = u.level;
            p.tags = u.tags.toArray(new String[0]);
            kOff.putLong(kOut.length()); kryo.serialize(u, kOut);
            pOff.putLong(pOut.length()); pojo.serialize(p, pOut);
        }
        kOff.putLong(kOut.length()); pOff.putLong(pOut.length());
        java.nio.file.Files.write(dir.resolve("kryo.bin"), kOut.getCopyOfBuffer());
        java.nio.file.Files.write(dir.resolve("pojo.bin"), pOut.getCopyOfBuffer());
        java.nio.file.Files.write(dir.resolve("kryo.offsets"), kOff.array());
        java.nio.file.Files.write(dir.resolve("pojo.offsets"), pOff.array());
        for (Object[] s : new Object[][] {{"kryo", kryo}, {"pojo", pojo}}) {
            DataOutputSerializer snap = new DataOutputSerializer(256);
            TypeSerializerSnapshot.writeVersionedSnapshot(snap, ((TypeSerializer<?>) s[1]).snapshotConfiguration());
            java.nio.file.Files.write(dir.resolve(s[0] + ".snapshot"), snap.getCopyOfBuffer());
        }
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        if (args.length == 3 && args[0].equals("bench")) {
            bench(Integer.parseInt(args[1]), java.nio.file.Paths.get(args[2]));
            return;
        }
        if (args.length == 1 && args[0].equals("table")) {
            Object kryo = KryoSerializer.class.getMethod("getKryo").invoke(kryo(Object.class, List.of()));
            Object resolver = kryo.getClass().getMethod("getClassResolver").invoke(kryo);
            for (int id = 0; id < 200; id++) {
                Object reg = resolver.getClass().getMethod("getRegistration", int.class).invoke(resolver, id);
                if (reg == null) continue;
                Object t = reg.getClass().getMethod("getType").invoke(reg);
                Object s = reg.getClass().getMethod("getSerializer").invoke(reg);
                out.println(id + " " + ((Class<?>) t).getName() + " " + s.getClass().getName());
            }
            return;
        }
        List<Class<?>> reg = List.of(Device.class, Level.class);
        sample(out, "device-registered", Device.class, reg,
               new Device("Pixel 8", "android-15", 1080, 1750000000000L, 0.25, true));
        sample(out, "device-unregistered", Device.class, List.of(),
               new Device("ThinkPad X1", "windows-11", 1920, -5L, -0.5, false));
        sample(out, "child-as-base", Base.class, reg, holder().anything);
        PublicFields p = new PublicFields(); p.name = "pub"; p.count = -7; p.total = 1L << 40;
        sample(out, "public-fields", PublicFields.class, List.of(), p);
        Device d = new Device("Pixel 8", "android-15", 1080, 1750000000000L, 0.25, true);
        Twin shared = new Twin(); shared.left = d; shared.right = d; shared.label = "shared";
        shared.id = new UUID(0x0123456789abcdefL, 0x1L); shared.level = Level.LOW; shared.boxed = -9L;
        sample(out, "twin-shared", Twin.class, reg, shared);
        Ring ring = new Ring(); ring.name = "r"; ring.next = ring;
        sample(out, "ring", Ring.class, List.of(), ring);
        Twin distinct = new Twin(); distinct.left = d; distinct.label = "distinct \u00e9\uD83D\uDE00";
        distinct.right = new Device("ThinkPad X1", "windows-11", 1920, -5L, -0.5, false);
        sample(out, "twin-distinct", Twin.class, reg, distinct);
        sample(out, "holder", Holder.class, reg, holder());
        sample(out, "holder-as-object", Object.class, List.of(), holder());
        sample(out, "uuid", UUID.class, List.of(), new UUID(1L, -1L));
        sample(out, "optional", Optional.class, List.of(), Optional.of("SAVE3"));
        sample(out, "string-list", List.class, List.of(), new ArrayList<>(Arrays.asList("x", "y")));
        sample(out, "null-value", Device.class, List.of(), null);
        sample(out, "texts", Texts.class, reg, texts(false));
        sample(out, "texts-edge", Texts.class, reg, texts(true));
        sample(out, "kafka-partition", org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartition.class,
               List.of(), new org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartition("payments", 7));
        // one JDK value each, declared Object (the class is written with it)
        sample(out, "jdk-aslist", Object.class, List.of(), Arrays.asList("a", "b"));
        BitSet bits = new BitSet(); bits.set(3); bits.set(64);
        sample(out, "jdk-bitset", Object.class, List.of(), bits);
        sample(out, "jdk-locale", Object.class, List.of(), new Locale("de", "CH"));
        sample(out, "jdk-sqldate", Object.class, List.of(), new java.sql.Date(1750000000123L));
        sample(out, "jdk-sqltime", Object.class, List.of(), new java.sql.Time(1750000000123L));
        java.sql.Timestamp ts = new java.sql.Timestamp(1750000000123L); ts.setNanos(123456789);
        sample(out, "jdk-timestamp", Object.class, List.of(), ts);
        sample(out, "jdk-localdate", Object.class, List.of(), LocalDate.of(2024, 11, 3));
        sample(out, "jdk-localdatetime", Object.class, List.of(), LocalDateTime.of(2024, 11, 3, 4, 5, 6, 7000));
        sample(out, "jdk-instant", Object.class, List.of(), Instant.ofEpochSecond(1750000000L, 123456789));
        sample(out, "jdk-uri", Object.class, List.of(), URI.create("https://example.com/a?b=1"));
        sample(out, "jdk-date", Object.class, List.of(), new Date(1750000000123L));
        sample(out, "jdk-enum", Object.class, List.of(), Level.HIGH);
        sample(out, "jdk-intarray", Object.class, List.of(), new int[] {1, -1, 300});
        sample(out, "jdk-strarray", Object.class, List.of(), new String[] {"p", null, "q"});
    }
}
