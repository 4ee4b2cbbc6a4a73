package flinkjob;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple;

/**
 * Declared mode's types, spelled as in Java: Long, Integer, Short, Byte, Double, Float, Boolean,
 * String, Tuple2<String, Integer> (any TupleN), List<T>, Map<K, V>, and a POJO by its class name
 * (a name with a dot, e.g. flinkjob.Profile). Each gives the TypeInformation whose serializer Flink
 * registers; json() writes a value as expected.json does.
 */
public final class FlinkTypes {
    private FlinkTypes() {}

    public static TypeInformation<?> parse(String spelling) {
        int[] pos = {0};
        TypeInformation<?> t = parse(spelling, pos);
        if (pos[0] != spelling.length()) throw new IllegalArgumentException("type " + spelling + ": trailing text at " + pos[0]);
        return t;
    }

    private static TypeInformation<?> parse(String s, int[] p) {
        while (p[0] < s.length() && s.charAt(p[0]) == ' ') p[0]++;
        int start = p[0];
        while (p[0] < s.length() && (Character.isJavaIdentifierPart(s.charAt(p[0])) || s.charAt(p[0]) == '.')) p[0]++;
        String name = s.substring(start, p[0]);
        List<TypeInformation<?>> args = new ArrayList<>();
        if (p[0] < s.length() && s.charAt(p[0]) == '<') {
            p[0]++;
            while (true) {
                args.add(parse(s, p));
                while (p[0] < s.length() && s.charAt(p[0]) == ' ') p[0]++;
                char c = p[0] < s.length() ? s.charAt(p[0]) : '?';
                p[0]++;
                if (c == '>') break;
                if (c != ',') throw new IllegalArgumentException("type " + s + ": expected ',' or '>' at " + (p[0] - 1));
            }
        }
        switch (name) {
            case "Long": return Types.LONG;
            case "Integer": return Types.INT;
            case "Short": return Types.SHORT;
            case "Byte": return Types.BYTE;
            case "Double": return Types.DOUBLE;
            case "Float": return Types.FLOAT;
            case "Boolean": return Types.BOOLEAN;
            case "String": return Types.STRING;
            case "List": return Types.LIST(arg(s, args, 1, 0));
            case "Map": return Types.MAP(arg(s, args, 2, 0), arg(s, args, 2, 1));
            default:
        }
        if (name.matches("Tuple[0-9]+") && Integer.parseInt(name.substring(5)) == args.size() && !args.isEmpty()) {
            return Types.TUPLE(args.toArray(new TypeInformation<?>[0]));
        }
        if (name.contains(".") && args.isEmpty()) return Types.POJO(Profiles.load(name));
        throw new IllegalArgumentException("type " + s + ": unknown type " + name + " (with " + args.size() + " type arguments)");
    }

    private static TypeInformation<?> arg(String s, List<TypeInformation<?>> args, int n, int i) {
        if (args.size() != n) throw new IllegalArgumentException("type " + s + ": expected " + n + " type arguments");
        return args.get(i);
    }

    /** A value as expected.json writes it: Tuple as [f0, ...], Map keyed by String.valueOf, POJO by field name. */
    public static Object json(Object v) {
        if (v == null || v instanceof String || v instanceof Number || v instanceof Boolean) return v;
        if (v instanceof Character) return String.valueOf(v);
        if (v instanceof Tuple) {
            Tuple t = (Tuple) v;
            List<Object> l = new ArrayList<>();
            for (int i = 0; i < t.getArity(); i++) l.add(json(t.getField(i)));
            return l;
        }
        if (v instanceof Iterable) {
            List<Object> l = new ArrayList<>();
            for (Object x : (Iterable<?>) v) l.add(json(x));
            return l;
        }
        if (v instanceof Map) {
            Map<String, Object> m = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) m.put(String.valueOf(e.getKey()), json(e.getValue()));
            return m;
        }
        Map<String, Object> m = new TreeMap<>();
        try {
            for (Class<?> c = v.getClass(); c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) || Modifier.isTransient(f.getModifiers())) continue;
                    f.setAccessible(true);
                    m.put(f.getName(), json(f.get(v)));
                }
            }
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        return m;
    }
}
