package flinkjob;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshotSerializationUtil;
import org.apache.flink.api.common.typeutils.base.BigIntSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRawValueData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.StructuredType;
import org.apache.flink.table.types.logical.StructuredType.StructuredAttribute;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;
import org.apache.flink.types.RowKind;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Ground truth for a decoder of the table runtime's RowData serialization: for each case, a file
 * `<name>.bin` holding what a savepoint holds for a RowDataSerializer (its snapshot, framed as
 * TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot frames it, then rows serialized by
 * RowDataSerializer.serialize), and `cases.json` describing the type and each row's values in a
 * canonical JSON form (tests/flink/README.md, "RowData samples").
 *
 * Usage: RowDataSamples OUT_DIR
 */
public final class RowDataSamples {
    private RowDataSamples() {}

    /** The class of the STRUCTURED type case (its attributes are the public fields). */
    public static final class Point {
        public int x;
        public double y;
        public String label;

        public Point() {}
    }

    private static final ClassLoader CL = RowDataSamples.class.getClassLoader();
    private static final DateTimeFormatter LDT = DateTimeFormatter.ISO_LOCAL_DATE_TIME;

    private static final class Row {
        final RowKind kind;
        final Object[] values;

        Row(RowKind kind, Object... values) {
            this.kind = kind;
            this.values = values;
        }
    }

    private static final class Case {
        final String name;
        final String sql;
        final RowType type;
        final List<Row> rows = new ArrayList<>();

        Case(String name, String sql, RowType type) {
            this.name = name;
            this.sql = sql;
            this.type = type;
        }

        Case kind(RowKind kind, Object... values) {
            if (values.length != type.getFieldCount()) {
                throw new IllegalArgumentException(name + ": row of " + values.length + " values, type has "
                        + type.getFieldCount() + " fields");
            }
            rows.add(new Row(kind, values));
            return this;
        }

        Case row(Object... values) {
            return kind(RowKind.INSERT, values);
        }
    }

    private static Case parsed(String name, String sql) {
        return new Case(name, sql, (RowType) LogicalTypeParser.parse(sql, CL));
    }

    // ---- internal values -------------------------------------------------------------------

    private static StringData s(String v) {
        return StringData.fromString(v);
    }

    private static DecimalData dec(String v, int p, int sc) {
        DecimalData d = DecimalData.fromBigDecimal(new BigDecimal(v), p, sc);
        if (d == null) throw new IllegalArgumentException(v + " does not fit DECIMAL(" + p + "," + sc + ")");
        return d;
    }

    /** A TIMESTAMP value from ISO local date-time text, truncated to the type's precision. */
    private static TimestampData ts(String iso, int precision) {
        LocalDateTime t = LocalDateTime.parse(iso);
        int drop = (int) Math.pow(10, 9 - precision);
        t = t.withNano(t.getNano() / drop * drop);
        return TimestampData.fromLocalDateTime(t);
    }

    /** A TIMESTAMP_LTZ value from an ISO instant, truncated to the type's precision. */
    private static TimestampData ltz(String iso, int precision) {
        Instant t = Instant.parse(iso);
        int drop = (int) Math.pow(10, 9 - precision);
        t = t.truncatedTo(ChronoUnit.SECONDS).plusNanos(t.getNano() / drop * drop);
        return TimestampData.fromInstant(t);
    }

    private static int date(String iso) {
        return (int) LocalDate.parse(iso).toEpochDay();
    }

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (i * 37 + seed);
        return b;
    }

    private static GenericArrayData arr(Object... v) {
        return new GenericArrayData(v);
    }

    private static GenericMapData map(Object... kv) {
        Map<Object, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return new GenericMapData(m);
    }

    private static GenericRowData grow(Object... v) {
        return GenericRowData.of(v);
    }

    private static String repeat(String s, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(s);
        return b.toString();
    }

    // ---- canonical JSON --------------------------------------------------------------------

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    private static Object floating(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        return d;
    }

    private static Map<String, Object> timestamp(TimestampData t, boolean ltz) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("epoch_nanos", BigInteger.valueOf(t.getMillisecond()).multiply(BigInteger.valueOf(1_000_000))
                .add(BigInteger.valueOf(t.getNanoOfMillisecond())));
        m.put("millis", t.getMillisecond());
        m.put("nano_of_milli", t.getNanoOfMillisecond());
        m.put("iso", ltz ? t.toInstant().toString() : LDT.format(t.toLocalDateTime()));
        return m;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object json(LogicalType t, Object v) {
        if (v == null) return null;
        switch (t.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case TIME_WITHOUT_TIME_ZONE:
            case INTERVAL_YEAR_MONTH:
            case INTERVAL_DAY_TIME:
                return v;
            case FLOAT:
                return floating((Float) v);
            case DOUBLE:
                return floating((Double) v);
            case DECIMAL:
                return ((DecimalData) v).toBigDecimal().toPlainString();
            case CHAR:
            case VARCHAR:
                return v.toString();
            case BINARY:
            case VARBINARY:
                return hex((byte[]) v);
            case DATE: {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("days", v);
                m.put("iso", LocalDate.ofEpochDay((Integer) v).toString());
                return m;
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return timestamp((TimestampData) v, false);
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return timestamp((TimestampData) v, true);
            case ARRAY: {
                LogicalType et = ((ArrayType) t).getElementType();
                ArrayData a = (ArrayData) v;
                ArrayData.ElementGetter g = ArrayData.createElementGetter(et);
                List<Object> out = new ArrayList<>();
                for (int i = 0; i < a.size(); i++) out.add(json(et, g.getElementOrNull(a, i)));
                return out;
            }
            case MAP:
            case MULTISET: {
                LogicalType kt;
                LogicalType vt;
                if (t instanceof MapType) {
                    kt = ((MapType) t).getKeyType();
                    vt = ((MapType) t).getValueType();
                } else {
                    kt = ((MultisetType) t).getElementType();
                    vt = new IntType(false);
                }
                MapData m = (MapData) v;
                ArrayData ks = m.keyArray();
                ArrayData vs = m.valueArray();
                ArrayData.ElementGetter kg = ArrayData.createElementGetter(kt);
                ArrayData.ElementGetter vg = ArrayData.createElementGetter(vt);
                List<Object> out = new ArrayList<>();
                for (int i = 0; i < m.size(); i++) {
                    out.add(Arrays.asList(json(kt, kg.getElementOrNull(ks, i)), json(vt, vg.getElementOrNull(vs, i))));
                }
                return out;
            }
            case ROW: {
                RowType rt = (RowType) t;
                return fields(rt.getFieldNames(), rt.getChildren(), (RowData) v);
            }
            case STRUCTURED_TYPE: {
                StructuredType st = (StructuredType) t;
                List<String> names = new ArrayList<>();
                List<LogicalType> types = new ArrayList<>();
                for (StructuredAttribute a : st.getAttributes()) {
                    names.add(a.getName());
                    types.add(a.getType());
                }
                return fields(names, types, (RowData) v);
            }
            case RAW: {
                RawType rt = (RawType) t;
                BinaryRawValueData raw = (BinaryRawValueData) v;
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("class", rt.getOriginatingClass().getName());
                m.put("string", String.valueOf(raw.toObject(rt.getTypeSerializer())));
                m.put("hex", hex(raw.toBytes(rt.getTypeSerializer())));
                return m;
            }
            default:
                throw new IllegalArgumentException("no canonical JSON for " + t);
        }
    }

    private static Map<String, Object> fields(List<String> names, List<LogicalType> types, RowData r) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            m.put(names.get(i), json(types.get(i), RowData.createFieldGetter(types.get(i), i).getFieldOrNull(r)));
        }
        return m;
    }

    private static List<Object> values(RowType t, RowData r) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < t.getFieldCount(); i++) {
            LogicalType ft = t.getTypeAt(i);
            out.add(json(ft, RowData.createFieldGetter(ft, i).getFieldOrNull(r)));
        }
        return out;
    }

    private static String typeText(LogicalType t) {
        try {
            return t.asSerializableString();
        } catch (RuntimeException e) {
            return t.asSummaryString();
        }
    }

    private static Map<String, Object> rowJson(RowType t, Row row, String input) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", row.kind.name());
        if (input != null) m.put("input", input);
        m.put("values", values(t, generic(row)));
        return m;
    }

    private static GenericRowData generic(Row row) {
        GenericRowData g = GenericRowData.of(row.values);
        g.setRowKind(row.kind);
        return g;
    }

    // ---- the cases -------------------------------------------------------------------------

    private static List<Case> cases() throws Exception {
        List<Case> cases = new ArrayList<>();
        String scalars = "b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE";
        cases.add(parsed("scalars", "ROW<" + scalars + ">")
                .row(true, (byte) 1, (short) 2, 3, 4L, 1.5f, 2.25)
                .kind(RowKind.UPDATE_BEFORE, false, Byte.MIN_VALUE, Short.MIN_VALUE, Integer.MIN_VALUE, Long.MIN_VALUE,
                        -Float.MAX_VALUE, -Double.MAX_VALUE)
                .kind(RowKind.UPDATE_AFTER, true, Byte.MAX_VALUE, Short.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE,
                        Float.MAX_VALUE, Double.MAX_VALUE)
                .kind(RowKind.DELETE, false, (byte) 0, (short) 0, 0, 0L, -0.0f, -0.0)
                .row(null, (byte) -1, null, -1, null, Float.NaN, Double.NaN)
                .row(true, null, (short) -300, null, -5000000000L, Float.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY)
                .row(false, (byte) 7, (short) 7, 7, 7L, Float.MIN_VALUE, Double.MIN_VALUE)
                .row(true, (byte) 0, (short) 0, 0, 0L, 0.1f, 0.1)
                .row(null, null, null, null, null, null, null));
        cases.add(parsed("scalars_not_null", "ROW<b BOOLEAN NOT NULL, ti TINYINT NOT NULL, si SMALLINT NOT NULL, "
                + "i INT NOT NULL, bi BIGINT NOT NULL, f FLOAT NOT NULL, d DOUBLE NOT NULL>")
                .row(true, (byte) -128, (short) 32767, -2147483648, 9007199254740993L, Float.NEGATIVE_INFINITY, Double.NaN)
                .kind(RowKind.DELETE, false, (byte) 127, (short) -32768, 2147483647, -9007199254740993L, 3.4028235e38f, 1e-300));
        cases.add(parsed("decimals", "ROW<d10_2 DECIMAL(10, 2), d38_10 DECIMAL(38, 10), d18_0 DECIMAL(18, 0), "
                + "d19_4 DECIMAL(19, 4), d5_5 DECIMAL(5, 5) NOT NULL>")
                .row(dec("12345678.90", 10, 2), dec("1234567890123456789012345678.0123456789", 38, 10),
                        dec("999999999999999999", 18, 0), dec("123456789012345.6789", 19, 4), dec("0.12345", 5, 5))
                .row(dec("-0.01", 10, 2), dec("-9999999999999999999999999999.9999999999", 38, 10),
                        dec("-999999999999999999", 18, 0), dec("-999999999999999.9999", 19, 4), dec("-0.99999", 5, 5))
                .row(dec("0", 10, 2), dec("0", 38, 10), dec("0", 18, 0), dec("0", 19, 4), dec("0", 5, 5))
                .row(dec("99999999.99", 10, 2), dec("0.0000000001", 38, 10), dec("1", 18, 0), dec("0.0001", 19, 4),
                        dec("0.00001", 5, 5))
                .kind(RowKind.UPDATE_AFTER, null, null, null, null, dec("0.5", 5, 5))
                .row(dec("-12.3", 10, 2), dec("1", 38, 10), dec("-1", 18, 0), dec("922337203685477.5807", 19, 4),
                        dec("0.00002", 5, 5)));
        String longText = repeat("Flink state ✓ ", 12) + "😀 end";
        cases.add(parsed("strings", "ROW<c CHAR(5), vc VARCHAR(10), s STRING, s_nn STRING NOT NULL>")
                .row(s("abcde"), s(""), s(""), s("x"))
                .row(s("ab"), s("abcdefg"), s("abcdefg"), s("abcdefgh"))
                .row(s("héllo"), s("héllo"), s("日本"), s("日本語"))
                .row(s("😀"), s("a😀b"), s("😀😀"), s("𝄞 clef"))
                .row(null, null, null, s(longText))
                .kind(RowKind.DELETE, s("     "), s("0123456789"), s(longText), s(""))
                .row(s("\u0000"), s("tab\tnl\n"), s("\"quoted\" \\"), s("1234567")));
        cases.add(parsed("binaries", "ROW<bin BINARY(3), vb VARBINARY(10), by BYTES, by_nn BYTES NOT NULL>")
                .row(new byte[] {1, 2, 3}, new byte[0], new byte[0], new byte[] {(byte) 0xff})
                .row(new byte[] {0, 0, 0}, bytes(7, 1), bytes(7, 2), bytes(8, 3))
                .row(new byte[] {(byte) 0xff, (byte) 0x80, 0x7f}, bytes(10, 4), bytes(300, 5), bytes(1, 0))
                .row(null, null, null, bytes(64, 9)));
        cases.add(parsed("temporal", "ROW<dt DATE, t0 TIME(0), t3 TIME(3), ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), "
                + "ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), ltz3 TIMESTAMP(3) WITH LOCAL TIME ZONE, "
                + "ltz6 TIMESTAMP(6) WITH LOCAL TIME ZONE, ts3_nn TIMESTAMP(3) NOT NULL>")
                .row(date("1970-01-01"), 0, 0, ts("1970-01-01T00:00:00", 0), ts("1970-01-01T00:00:00", 3),
                        ts("1970-01-01T00:00:00", 6), ts("1970-01-01T00:00:00", 9), ltz("1970-01-01T00:00:00Z", 3),
                        ltz("1970-01-01T00:00:00Z", 6), ts("1970-01-01T00:00:00", 3))
                .row(date("2024-02-29"), 45296000, 45296789, ts("2024-02-29T12:34:56", 0),
                        ts("2024-02-29T12:34:56.789", 3), ts("2024-02-29T12:34:56.789123", 6),
                        ts("2024-02-29T12:34:56.789123456", 9), ltz("2024-02-29T12:34:56.789Z", 3),
                        ltz("2024-02-29T12:34:56.789123Z", 6), ts("2024-02-29T12:34:56.789", 3))
                .row(date("1969-12-31"), 86399000, 86399999, ts("1969-12-31T23:59:59", 0),
                        ts("1969-12-31T23:59:59.999", 3), ts("1969-12-31T23:59:59.999999", 6),
                        ts("1969-12-31T23:59:59.123456789", 9), ltz("1969-12-31T23:59:59.001Z", 3),
                        ltz("1969-07-20T20:17:40.000001Z", 6), ts("1900-01-01T00:00:00.001", 3))
                .row(date("0001-01-01"), 1000, 1, ts("0001-01-01T00:00:00", 0), ts("0001-01-01T00:00:00.001", 3),
                        ts("1000-06-15T08:30:00.5", 6), ts("9999-12-31T23:59:59.999999999", 9),
                        ltz("9999-12-31T23:59:59.999Z", 3), ltz("0001-01-01T00:00:00.000001Z", 6),
                        ts("9999-12-31T23:59:59.999", 3))
                .kind(RowKind.UPDATE_BEFORE, date("9999-12-31"), null, null, null, null, null,
                        ts("1969-12-31T23:59:59.999999999", 9), null, null, ts("1969-12-31T23:59:59.999", 3))
                .row(null, null, null, null, null, null, null, null, null, ts("2000-01-01T00:00:00", 3)));
        cases.add(parsed("intervals", "ROW<ym INTERVAL YEAR TO MONTH, ds INTERVAL DAY TO SECOND(3), "
                + "y INTERVAL YEAR, ds_nn INTERVAL DAY TO SECOND(3) NOT NULL>")
                .row(0, 0L, 12, 1L)
                .row(14, 90061001L, 120, -1L)
                .row(-25, -86400000L, -12, Long.MAX_VALUE)
                .row(Integer.MAX_VALUE, Long.MIN_VALUE, Integer.MIN_VALUE, 0L)
                .row(null, null, null, 1234L));
        cases.add(parsed("arrays", "ROW<ai ARRAY<INT>, a_s ARRAY<STRING>, abi ARRAY<BIGINT>, "
                + "ar ARRAY<ROW<p INT, q STRING>>, ai_nn ARRAY<INT NOT NULL> NOT NULL>")
                .row(arr(1, 2, 3), arr(s("a"), s("bb"), s("longer than seven")), arr(1L, null, 3L),
                        arr(grow(1, s("one")), grow(null, s("two")), null), arr(7))
                .row(arr(), arr(), arr(), arr(), arr())
                .row(arr((Object) null), arr(null, s(""), null), arr(null, null, null, null, null, null, null, null, null),
                        arr(grow(null, null)), arr(Integer.MIN_VALUE, Integer.MAX_VALUE))
                .row(null, null, null, null, arr(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
                .row(arr(-1), arr(s("日本語"), s("😀")), arr(Long.MIN_VALUE, Long.MAX_VALUE),
                        arr(grow(42, s("forty-two is more than seven bytes"))), arr(5, 6)));
        cases.add(parsed("array_elements", "ROW<ab ARRAY<BOOLEAN>, ati ARRAY<TINYINT>, asi ARRAY<SMALLINT>, "
                + "af ARRAY<FLOAT>, ad ARRAY<DOUBLE>, adec ARRAY<DECIMAL(10, 2)>, adecw ARRAY<DECIMAL(20, 2)>, "
                + "ats3 ARRAY<TIMESTAMP(3)>, ats9 ARRAY<TIMESTAMP(9)>, adt ARRAY<DATE>, abin ARRAY<BYTES>, "
                + "aa ARRAY<ARRAY<INT>>>")
                .row(arr(true, null, false), arr((byte) 1, (byte) -1, null), arr((short) 1000, null),
                        arr(1.5f, Float.NaN, null), arr(-2.5, null, Double.POSITIVE_INFINITY),
                        arr(dec("1.25", 10, 2), null, dec("-99999999.99", 10, 2)),
                        arr(dec("123456789012345678.90", 20, 2), null, dec("-0.01", 20, 2)),
                        arr(ts("2020-01-01T00:00:00.123", 3), null), arr(ts("1960-05-05T05:05:05.123456789", 9), null),
                        arr(date("1969-01-01"), null), arr(new byte[] {1}, null, bytes(20, 7)),
                        arr(arr(1, 2), null, arr(), arr((Object) null)))
                .row(arr(), arr(), arr(), arr(), arr(), arr(), arr(), arr(), arr(), arr(), arr(), arr()));
        cases.add(parsed("maps", "ROW<m MAP<STRING, BIGINT>, mi MAP<INT, ARRAY<STRING>>, ms MULTISET<STRING>, "
                + "mn MAP<INT NOT NULL, ROW<v DOUBLE>>>")
                .row(map(s("a"), 1L, s("bb"), null, s("a key longer than 7"), -3L),
                        map(1, arr(s("x"), s("y")), 2, arr(), 3, null),
                        map(s("apple"), 3, s("banana"), 1), map(10, grow(1.5), 20, null))
                .row(map(), map(), map(), map())
                .row(null, null, null, null)
                .kind(RowKind.UPDATE_AFTER, map(s(""), 0L), map(-1, arr((Object) null)), map(s("😀"), 1000000),
                        map(0, grow((Object) null))));
        cases.add(parsed("nested", "ROW<x INT, y ROW<z STRING>, w ROW<a BIGINT NOT NULL, b ROW<c DOUBLE, "
                + "d ARRAY<ROW<e STRING>>>>>")
                .row(1, grow(s("z")), grow(10L, grow(0.5, arr(grow(s("deep")), grow((Object) null)))))
                .row(2, grow((Object) null), grow(-1L, null))
                .row(3, null, null)
                .kind(RowKind.DELETE, null, grow(s("a nested string longer than 7")), grow(0L, grow(null, arr()))));
        cases.add(parsed("all_null", "ROW<b BOOLEAN, i INT, bi BIGINT, d DOUBLE, dc DECIMAL(38, 10), "
                + "dc_c DECIMAL(10, 2), s STRING, by BYTES, dt DATE, ts9 TIMESTAMP(9), ts3 TIMESTAMP(3), "
                + "a ARRAY<INT>, m MAP<STRING, INT>, r ROW<x INT>>")
                .row(null, null, null, null, null, null, null, null, null, null, null, null, null, null)
                .kind(RowKind.UPDATE_BEFORE, null, null, null, null, null, null, null, null, null, null, null, null,
                        null, null));
        for (int n : new int[] {56, 57, 70}) {
            List<RowType.RowField> fs = new ArrayList<>();
            StringBuilder sql = new StringBuilder("ROW<");
            for (int i = 0; i < n; i++) {
                fs.add(new RowType.RowField("f" + i, new IntType()));
                sql.append(i == 0 ? "" : ", ").append("f").append(i).append(" INT");
            }
            Case c = new Case("wide_" + n, sql.append(">").toString(), new RowType(fs));
            Object[] full = new Object[n];
            Object[] holes = new Object[n];
            Object[] none = new Object[n];
            for (int i = 0; i < n; i++) {
                full[i] = i * 1000 - 7;
                holes[i] = (i == 0 || i == 55 || i == 56 || i == 63 || i == 64 || i == n - 1 || i % 9 == 4) ? null : -i;
            }
            c.row(full).kind(RowKind.UPDATE_AFTER, holes).kind(RowKind.DELETE, none);
            cases.add(c);
        }
        cases.add(new Case("empty_row", "ROW<>", new RowType(new ArrayList<>()))
                .kind(RowKind.INSERT).kind(RowKind.UPDATE_BEFORE).kind(RowKind.UPDATE_AFTER).kind(RowKind.DELETE));
        RawType<Duration> rawDuration = new RawType<>(Duration.class, kryo(Duration.class));
        RawType<BigInteger> rawBig = new RawType<>(BigInteger.class, BigIntSerializer.INSTANCE);
        RowType rawRow = RowType.of(new LogicalType[] {new IntType(), rawDuration, rawBig},
                new String[] {"id", "dur", "big"});
        cases.add(new Case("raw", "ROW<id INT, dur RAW('java.time.Duration', <KryoSerializer>), "
                + "big RAW('java.math.BigInteger', <BigIntSerializer>)>", rawRow)
                .row(1, RawValueData.fromObject(Duration.ofSeconds(90061, 5)), RawValueData.fromObject(BigInteger.ONE))
                .row(2, RawValueData.fromObject(Duration.ofMillis(-1500)),
                        RawValueData.fromObject(new BigInteger("-123456789012345678901234567890")))
                .row(3, null, null));
        StructuredType point = StructuredType.newBuilder(Point.class)
                .attributes(Arrays.asList(new StructuredAttribute("x", new IntType(false)),
                        new StructuredAttribute("y", LogicalTypeParser.parse("DOUBLE", CL)),
                        new StructuredAttribute("label", LogicalTypeParser.parse("STRING", CL))))
                .build();
        RowType structRow = RowType.of(new LogicalType[] {new IntType(), point}, new String[] {"id", "p"});
        cases.add(new Case("structured", "ROW<id INT, p STRUCTURED<'" + Point.class.getName()
                + "', x INT NOT NULL, y DOUBLE, label STRING>>", structRow)
                .row(1, grow(3, 4.5, s("origin-ish")))
                .row(2, grow(-1, null, null))
                .row(3, null));
        return cases;
    }

    /** KryoSerializer for a class: its constructor takes a SerializerConfig from 1.19 on, an
     *  ExecutionConfig before (and no longer in 2.x); one source tree serves every release. */
    @SuppressWarnings("unchecked")
    private static <T> TypeSerializer<T> kryo(Class<T> c) throws Exception {
        Class<?> ks = Class.forName("org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer");
        try {
            Class<?> sc = Class.forName("org.apache.flink.api.common.serialization.SerializerConfig");
            Object cfg = Class.forName("org.apache.flink.api.common.serialization.SerializerConfigImpl")
                    .getConstructor().newInstance();
            return (TypeSerializer<T>) ks.getConstructor(Class.class, sc).newInstance(c, cfg);
        } catch (ClassNotFoundException e) {
            return (TypeSerializer<T>) ks.getConstructor(Class.class, ExecutionConfig.class)
                    .newInstance(c, new ExecutionConfig());
        }
    }

    // ---- writing ---------------------------------------------------------------------------

    /** The int 2 of the snapshot proxy's version, then the UTF class name, int version and payload. */
    private static <T> int writeSnapshot(DataOutputViewStreamWrapper out, ByteArrayOutputStream buf,
                                          TypeSerializer<T> ser) throws IOException {
        TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot(out, ser.snapshotConfiguration());
        out.flush();
        return buf.size();
    }

    private static Map<String, Object> writeCase(Path dir, Case c) throws IOException {
        RowDataSerializer ser = new RowDataSerializer(c.type);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        DataOutputViewStreamWrapper out = new DataOutputViewStreamWrapper(buf);
        int snapshotLength = writeSnapshot(out, buf, ser);
        out.writeInt(c.rows.size());
        List<Object> rows = new ArrayList<>();
        for (int i = 0; i < c.rows.size(); i++) {
            Row row = c.rows.get(i);
            GenericRowData g = generic(row);
            // Even rows go in as BinaryRowData (converted first), odd ones as GenericRowData.
            boolean binary = i % 2 == 0;
            ser.serialize(binary ? ser.toBinaryRow(g) : g, out);
            rows.add(rowJson(c.type, row, binary ? "binary" : "generic"));
        }
        out.flush();
        Files.write(dir.resolve(c.name + ".bin"), buf.toByteArray());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", c.name);
        m.put("file", c.name + ".bin");
        m.put("serializer", "RowDataSerializer");
        m.put("sql", c.sql);
        m.put("type", typeText(c.type));
        List<Object> fields = new ArrayList<>();
        for (RowType.RowField f : c.type.getFields()) {
            Map<String, Object> fm = new LinkedHashMap<>();
            fm.put("name", f.getName());
            fm.put("type", typeText(f.getType()));
            fm.put("root", f.getType().getTypeRoot().name());
            fm.put("nullable", f.getType().isNullable());
            fields.add(fm);
        }
        m.put("fields", fields);
        m.put("snapshot_length", snapshotLength);
        m.put("rows", rows);
        return m;
    }

    /** MapSerializer<RowData, List<RowData>> as SQL operators keep per-key maps of row lists, and
     *  ListSerializer<RowData> as a list state of rows. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static List<Map<String, Object>> writeComposites(Path dir) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        String keySql = "ROW<k STRING, n INT>";
        String valueSql = "ROW<v BIGINT, w STRING, ts TIMESTAMP(3)>";
        RowType kt = (RowType) LogicalTypeParser.parse(keySql, CL);
        RowType vt = (RowType) LogicalTypeParser.parse(valueSql, CL);
        RowDataSerializer ks = new RowDataSerializer(kt);
        RowDataSerializer vs = new RowDataSerializer(vt);

        // map_of_row_lists
        MapSerializer<RowData, List<RowData>> ms = new MapSerializer<>(ks, new ListSerializer<>(vs));
        List<Map<RowData, List<RowData>>> maps = new ArrayList<>();
        Map<RowData, List<RowData>> m1 = new LinkedHashMap<>();
        m1.put(row(RowKind.INSERT, s("alpha"), 1), Arrays.asList(
                row(RowKind.INSERT, 10L, s("x"), ts("2024-01-01T00:00:00.5", 3)),
                row(RowKind.UPDATE_AFTER, -1L, null, null)));
        m1.put(row(RowKind.INSERT, s("a key longer than 7"), null), new ArrayList<>());
        m1.put(row(RowKind.INSERT, null, 2), null);
        maps.add(m1);
        maps.add(new LinkedHashMap<>());
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        DataOutputViewStreamWrapper o = new DataOutputViewStreamWrapper(buf);
        int snap = writeSnapshot(o, buf, ms);
        o.writeInt(maps.size());
        List<Object> values = new ArrayList<>();
        for (Map<RowData, List<RowData>> m : maps) {
            ms.serialize(m, o);
            List<Object> entries = new ArrayList<>();
            for (Map.Entry<RowData, List<RowData>> e : m.entrySet()) {
                List<Object> lst = null;
                if (e.getValue() != null) {
                    lst = new ArrayList<>();
                    for (RowData r : e.getValue()) lst.add(compositeRow(vt, r));
                }
                entries.add(Arrays.asList(compositeRow(kt, e.getKey()), lst));
            }
            values.add(entries);
        }
        o.flush();
        Files.write(dir.resolve("map_of_row_lists.bin"), buf.toByteArray());
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("name", "map_of_row_lists");
        c.put("file", "map_of_row_lists.bin");
        c.put("serializer", "MapSerializer<RowData, List<RowData>>");
        c.put("key_sql", keySql);
        c.put("value_sql", valueSql);
        c.put("snapshot_length", snap);
        c.put("values", values);
        out.add(c);

        // list_of_rows
        ListSerializer<RowData> ls = new ListSerializer<>(vs);
        List<List<RowData>> lists = Arrays.asList(
                Arrays.asList(row(RowKind.INSERT, 1L, s("a"), ts("1969-12-31T23:59:59.999", 3)),
                        row(RowKind.DELETE, 2L, s("日本語のテキスト"), null)),
                new ArrayList<>());
        buf = new ByteArrayOutputStream();
        o = new DataOutputViewStreamWrapper(buf);
        snap = writeSnapshot(o, buf, ls);
        o.writeInt(lists.size());
        values = new ArrayList<>();
        for (List<RowData> l : lists) {
            ls.serialize(l, o);
            List<Object> rs = new ArrayList<>();
            for (RowData r : l) rs.add(compositeRow(vt, r));
            values.add(rs);
        }
        o.flush();
        Files.write(dir.resolve("list_of_rows.bin"), buf.toByteArray());
        c = new LinkedHashMap<>();
        c.put("name", "list_of_rows");
        c.put("file", "list_of_rows.bin");
        c.put("serializer", "ListSerializer<RowData>");
        c.put("value_sql", valueSql);
        c.put("snapshot_length", snap);
        c.put("values", values);
        out.add(c);
        return out;
    }

    private static GenericRowData row(RowKind kind, Object... v) {
        GenericRowData g = GenericRowData.of(v);
        g.setRowKind(kind);
        return g;
    }

    private static Map<String, Object> compositeRow(RowType t, RowData r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", r.getRowKind().name());
        m.put("values", values(t, r));
        return m;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RowDataSamples OUT_DIR");
            System.exit(2);
        }
        Path dir = Paths.get(args[0]);
        Files.createDirectories(dir);
        List<Object> all = new ArrayList<>();
        for (Case c : cases()) all.add(writeCase(dir, c));
        all.addAll(writeComposites(dir));
        Files.write(dir.resolve("cases.json"), Json.write(all).getBytes(StandardCharsets.UTF_8));
        Files.write(dir.resolve("flink_version.txt"),
                (org.apache.flink.runtime.util.EnvironmentInformation.getVersion() + "\n").getBytes(StandardCharsets.UTF_8));
    }
}
