package flinkjob;

import java.util.Collection;
import java.util.Map;

/**
 * A small JSON writer for maps, lists, strings, numbers, booleans and null (Doubles as Double.toString),
 * and a reader (objects as LinkedHashMap, arrays as ArrayList, integers as Long, other numbers as Double).
 */
public final class Json {
    private Json() {}

    public static Object parse(String text) {
        int[] pos = {0};
        Object v = value(text, pos);
        skip(text, pos);
        if (pos[0] != text.length()) throw new IllegalArgumentException("JSON: trailing text at offset " + pos[0]);
        return v;
    }

    private static void skip(String t, int[] p) {
        while (p[0] < t.length() && Character.isWhitespace(t.charAt(p[0]))) p[0]++;
    }

    private static Object value(String t, int[] p) {
        skip(t, p);
        if (p[0] >= t.length()) throw new IllegalArgumentException("JSON: unexpected end");
        char c = t.charAt(p[0]);
        if (c == '{') {
            Map<String, Object> m = new java.util.LinkedHashMap<>();
            p[0]++;
            skip(t, p);
            if (t.charAt(p[0]) == '}') {
                p[0]++;
                return m;
            }
            while (true) {
                skip(t, p);
                String k = (String) value(t, p);
                skip(t, p);
                expect(t, p, ':');
                m.put(k, value(t, p));
                skip(t, p);
                if (t.charAt(p[0]) == ',') p[0]++;
                else {
                    expect(t, p, '}');
                    return m;
                }
            }
        }
        if (c == '[') {
            java.util.List<Object> l = new java.util.ArrayList<>();
            p[0]++;
            skip(t, p);
            if (t.charAt(p[0]) == ']') {
                p[0]++;
                return l;
            }
            while (true) {
                l.add(value(t, p));
                skip(t, p);
                if (t.charAt(p[0]) == ',') p[0]++;
                else {
                    expect(t, p, ']');
                    return l;
                }
            }
        }
        if (c == '"') {
            StringBuilder sb = new StringBuilder();
            p[0]++;
            while (t.charAt(p[0]) != '"') {
                char ch = t.charAt(p[0]++);
                if (ch != '\\') {
                    sb.append(ch);
                    continue;
                }
                char e = t.charAt(p[0]++);
                switch (e) {
                    case 'n': sb.append('\n'); break;
                    case 't': sb.append('\t'); break;
                    case 'r': sb.append('\r'); break;
                    case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'u': sb.append((char) Integer.parseInt(t.substring(p[0], p[0] + 4), 16)); p[0] += 4; break;
                    default: sb.append(e);
                }
            }
            p[0]++;
            return sb.toString();
        }
        for (String lit : new String[] {"true", "false", "null"}) {
            if (t.startsWith(lit, p[0])) {
                p[0] += lit.length();
                return lit.equals("null") ? null : Boolean.valueOf(lit);
            }
        }
        int start = p[0];
        while (p[0] < t.length() && "+-0123456789.eE".indexOf(t.charAt(p[0])) >= 0) p[0]++;
        String num = t.substring(start, p[0]);
        if (num.isEmpty()) throw new IllegalArgumentException("JSON: unexpected '" + c + "' at offset " + start);
        return num.matches("-?[0-9]+") ? (Object) Long.valueOf(num) : (Object) Double.valueOf(num);
    }

    private static void expect(String t, int[] p, char c) {
        if (p[0] >= t.length() || t.charAt(p[0]) != c) throw new IllegalArgumentException("JSON: expected '" + c + "' at offset " + p[0]);
        p[0]++;
    }

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
