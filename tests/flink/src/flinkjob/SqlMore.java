package flinkjob;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * mode=sql-restore's second batch of src events (knobs more-keys, more-events, more-watermark) and
 * the model of what group_agg and dedup_first emit for it when the first batch's state is intact.
 * Event j has key index more-keys[j % n], name NAMES[j % 5], v = value-max + 1 + j (above every
 * first-batch value: no ties) and rt = first batch's end + (j + 1) * 100 ms.
 */
public final class SqlMore implements Serializable {
    public final SqlInput in;
    public final int[] keyIndexes;
    public final int numEvents;
    public final long watermark;

    public SqlMore(SqlInput in, Map<String, String> knobs) {
        this.in = in;
        String[] ks = knobs.getOrDefault("more-keys", "0,1,2,28,29,30,31").split(",");
        keyIndexes = new int[ks.length];
        for (int i = 0; i < ks.length; i++) keyIndexes[i] = Integer.parseInt(ks[i].trim());
        numEvents = Integer.parseInt(knobs.getOrDefault("more-events", "12"));
        watermark = Long.parseLong(knobs.getOrDefault("more-watermark", "60000"));
    }

    public List<SqlInput.Ev> events() {
        List<SqlInput.Ev> out = new ArrayList<>();
        for (int j = 0; j < numEvents; j++) {
            int ki = keyIndexes[j % keyIndexes.length];
            int seq = in.numEvents + j;
            out.add(new SqlInput.Ev(seq, ki, in.key(ki), SqlInput.NAMES[j % SqlInput.NAMES.length], in.valueMax + 1 + j,
                    seq * SqlInput.SPACING_MS));
        }
        return out;
    }

    /** The second batch as expected.json's input.src spells events. */
    List<Object> eventsJson() {
        List<Object> src = new ArrayList<>();
        for (SqlInput.Ev e : events()) src.add(SqlInput.cells(e.seq, e.k, e.name, e.v, e.price(), e.ratio(), e.flag(), e.at(), e.rt));
        return src;
    }

    /** The changelog each modelled statement emits for the second batch over the first batch's state, sorted. */
    Map<String, Object> model() {
        Map<Integer, List<SqlInput.Ev>> byKey = new TreeMap<>();
        for (SqlInput.Ev e : in.events()) byKey.computeIfAbsent(e.k, k -> new ArrayList<>()).add(e);
        List<List<Object>> group = new ArrayList<>(), dedup = new ArrayList<>();
        for (SqlInput.Ev e : events()) {
            List<SqlInput.Ev> seen = byKey.computeIfAbsent(e.k, k -> new ArrayList<>());
            if (seen.isEmpty()) dedup.add(row("+I", SqlInput.cells(e.k, e.name, e.v, e.price(), e.ratio(), e.flag(), e.at())));
            else group.add(row("-U", groupRow(e.k, seen)));
            seen.add(e);
            group.add(row(seen.size() == 1 ? "+I" : "+U", groupRow(e.k, seen)));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("group_agg", SqlModel.sortedChangelog(group));
        out.put("dedup_first", SqlModel.sortedChangelog(dedup));
        return out;
    }

    private static List<Object> groupRow(int k, List<SqlInput.Ev> events) {
        SqlModel.GroupAcc a = SqlModel.groupAcc(events);
        return SqlInput.cells(k, a.cnt, a.total, a.maxName, (long) a.names.size());
    }

    private static List<Object> row(String kind, List<Object> cells) {
        List<Object> r = new ArrayList<>();
        r.add(kind);
        r.addAll(cells);
        return r;
    }
}
