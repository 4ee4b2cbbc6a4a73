package flinkjob;

import java.util.Collection;
import java.util.Map;

/** A small JSON writer for maps, lists, strings, numbers, booleans and null (Doubles as Double.toString). */
public final class Json {
    private Json() {}

    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            string(sb, (String) v);
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) throw new IllegalArgumentException("no JSON for " + d);
            sb.append(Double.toString(d));
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map) {
            Map<?, ?> m = (Map<?, ?>) v;
            if (m.isEmpty()) {
                sb.append("{}");
                return;
            }
            sb.append("{");
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                sb.append(first ? "\n" : ",\n");
                first = false;
                pad(sb, indent + 1);
                string(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue(), indent + 1);
            }
            sb.append("\n");
            pad(sb, indent);
            sb.append("}");
        } else if (v instanceof Collection) {
            Collection<?> c = (Collection<?>) v;
            boolean flat = c.stream().noneMatch(x -> x instanceof Map || x instanceof Collection);
            if (flat) {
                sb.append("[");
                boolean first = true;
                for (Object x : c) {
                    if (!first) sb.append(", ");
                    first = false;
                    write(sb, x, indent);
                }
                sb.append("]");
                return;
            }
            sb.append("[");
            boolean first = true;
            for (Object x : c) {
                sb.append(first ? "\n" : ",\n");
                first = false;
                pad(sb, indent + 1);
                write(sb, x, indent + 1);
            }
            sb.append("\n");
            pad(sb, indent);
            sb.append("]");
        } else {
            throw new IllegalArgumentException("no JSON for " + v.getClass());
        }
    }

    private static void pad(StringBuilder sb, int n) {
        for (int i = 0; i < n; i++) sb.append(' ');
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }
}
