package flinkjob;

import java.util.Arrays;
import java.util.List;

/** The value of proc's `kryo` state (state group `kryo`): declared as a GenericTypeInfo, so Flink
 * writes it with its KryoSerializer, which statectl reads as bytes and cannot encode. */
public final class KryoBox {
    final String type;
    final long total;

    KryoBox(String type, long total) {
        this.type = type;
        this.total = total;
    }

    /** As expected.json writes it: [type of the last event, sum of the values]. */
    static List<Object> json(KryoBox b) {
        return b == null ? null : Arrays.asList(b.type, b.total);
    }
}
