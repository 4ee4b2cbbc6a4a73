package flinkjob;

import java.lang.reflect.Field;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/**
 * proc's `profile` POJO by class name (flinkjob.Profile, or the dev fixtures' flinkfixtures.Profile):
 * both have the fields hits (int), name (String), total (long), read and written by reflection.
 */
public final class Profiles {
    private Profiles() {}

    static Class<?> load(String className) {
        try {
            return Class.forName(className);
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("pojo-class: no class " + className, e);
        }
    }

    @SuppressWarnings("unchecked")
    public static TypeInformation<Object> typeInfo(String className) {
        return (TypeInformation<Object>) Types.POJO(load(className));
    }

    public static Object of(String className, int hits, String name, long total) throws Exception {
        Object p = load(className).getConstructor().newInstance();
        Class<?> c = p.getClass();
        c.getField("hits").setInt(p, hits);
        c.getField("name").set(p, name);
        c.getField("total").setLong(p, total);
        return p;
    }

    /** {hits, name, total} as expected.json writes them; null for no profile. */
    public static Map<String, Object> json(Object p) throws Exception {
        if (p == null) return null;
        Class<?> c = p.getClass();
        Field name = c.getField("name");
        return Model.profileJson(c.getField("hits").getInt(p), (String) name.get(p), c.getField("total").getLong(p));
    }
}
