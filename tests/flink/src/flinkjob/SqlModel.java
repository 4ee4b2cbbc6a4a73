package flinkjob;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The SQL job's model: each statement's result and each stateful operator's state at the savepoint,
 * computed from SqlInput alone (every src event and dim row processed, watermark 30 000 on both
 * inputs). Key labels are String.valueOf(key); values are spelled as SqlInput.cell does.
 */
public final class SqlModel {
    static final long W = SqlInput.WATERMARK;
    final SqlInput in;
    final List<SqlInput.Ev> events;
    final List<SqlInput.Dim> dims;
    final Map<Integer, List<SqlInput.Ev>> byKey = new TreeMap<>();
    final Map<Integer, List<SqlInput.Dim>> dimsByKey = new TreeMap<>();

    SqlModel(SqlInput in) {
        this.in = in;
        events = in.events();
        dims = in.dims();
        for (SqlInput.Ev e : events) byKey.computeIfAbsent(e.k, k -> new ArrayList<>()).add(e);
        for (SqlInput.Dim d : dims) dimsByKey.computeIfAbsent(d.k, k -> new ArrayList<>()).add(d);
    }

    static Map<String, Object> obj(Object... kv) {
        return Model.obj(kv);
    }

    static String label(Object key) {
        return String.valueOf(key);
    }

    Map<String, Object> inputJson() {
        List<Object> src = new ArrayList<>(), dim = new ArrayList<>();
        for (SqlInput.Ev e : events) src.add(SqlInput.cells(e.seq, e.k, e.name, e.v, e.price(), e.ratio(), e.flag(), e.at(), e.rt));
        for (SqlInput.Dim d : dims) dim.add(SqlInput.cells(d.k, d.tier(), d.score(), d.credit(), d.vip(), d.since(), d.rt));
        return obj("src_columns", Arrays.asList("seq", "k", "name", "v", "price", "ratio", "flag", "seen_at", "rt"), "src", src,
                "dim_columns", Arrays.asList("k", "tier", "score", "credit", "vip", "since", "rt"), "dim", dim,
                "src_subtask_of_key", "key index % parallelism (k = 7 * index + 3)");
    }

    // ---- statement results ----

    List<List<Object>> output(String statement) {
        List<List<Object>> out = new ArrayList<>();
        switch (statement) {
            case "group_agg":
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    GroupAcc a = groupAcc(e.getValue());
                    out.add(SqlInput.cells(e.getKey(), a.cnt, a.total, a.maxName, (long) a.names.size()));
                }
                break;
            case "retract_agg":
                for (Map.Entry<Integer, List<SqlInput.Ev>> b : lastByBucket().entrySet()) {
                    List<SqlInput.Ev> rows = b.getValue();
                    long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
                    for (SqlInput.Ev r : rows) {
                        min = Math.min(min, r.v);
                        max = Math.max(max, r.v);
                    }
                    out.add(SqlInput.cells(b.getKey(), min, max, (long) rows.size()));
                }
                break;
            case "dedup_first":
                for (List<SqlInput.Ev> l : byKey.values()) out.add(dedupOut(l.get(0)));
                break;
            case "dedup_last":
                for (List<SqlInput.Ev> l : byKey.values()) out.add(dedupOut(last(l)));
                break;
            case "top_n":
                for (List<SqlInput.Ev> l : byKey.values()) {
                    List<SqlInput.Ev> top = top3(l);
                    for (int i = 0; i < top.size(); i++) out.add(SqlInput.cells(top.get(i).k, top.get(i).v, top.get(i).name, (long) (i + 1)));
                }
                break;
            case "tumble":
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    for (Map.Entry<Long, List<SqlInput.Ev>> w : bucket(e.getValue(), 10_000L).entrySet()) {
                        long end = w.getKey() + 10_000L;
                        if (end - 1 <= W) out.add(SqlInput.cells(e.getKey(), SqlInput.ts(w.getKey()), SqlInput.ts(end), (long) w.getValue().size(), sum(w.getValue())));
                    }
                }
                break;
            case "hop":
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    for (Map.Entry<Long, List<SqlInput.Ev>> w : hopWindows(e.getValue()).entrySet()) {
                        long end = w.getKey() + 10_000L;
                        if (end - 1 <= W) out.add(SqlInput.cells(e.getKey(), SqlInput.ts(w.getKey()), SqlInput.ts(end), (long) w.getValue().size(), max(w.getValue())));
                    }
                }
                break;
            case "join":
                for (SqlInput.Ev s : events) {
                    for (SqlInput.Dim d : dimsByKey.getOrDefault(s.k, new ArrayList<>())) {
                        out.add(SqlInput.cells(s.k, s.v, s.price(), s.flag(), d.tier(), d.score(), d.credit(), d.vip(), d.since()));
                    }
                }
                break;
            case "interval_join":
                for (SqlInput.Ev s : events) {
                    for (SqlInput.Dim d : dimsByKey.getOrDefault(s.k, new ArrayList<>())) {
                        if (Math.abs(s.rt - d.rt) <= 4000) out.add(SqlInput.cells(s.k, s.v, s.ratio(), d.tier()));
                    }
                }
                break;
            case "over":
                for (List<SqlInput.Ev> l : byKey.values()) {
                    List<SqlInput.Ev> done = processed(l);
                    for (int i = 0; i < done.size(); i++) {
                        List<SqlInput.Ev> w = done.subList(Math.max(0, i - 2), i + 1);
                        out.add(SqlInput.cells(done.get(i).k, done.get(i).v, sum(w), (long) w.size(), min(w)));
                    }
                }
                break;
            default:
                throw new IllegalArgumentException(statement);
        }
        return out;
    }

    // ---- operator state ----

    /**
     * The keyed states each operator registers (names from flink-table-runtime's functions, the
     * same in 1.20 and 2.3); timer services are listed as their `_timer_state/...` states.
     */
    static List<String> stateNames(String statement, String kind) {
        String user = "_timer_state/event_user-timers,_timer_state/processing_user-timers";
        switch (statement + "/" + kind) {
            case "group_agg/GroupAggregate": return split("accState,distinctAcc_0,distinctAcc_0_null_state," + user);
            case "retract_agg/GroupAggregate": return split("accState,agg0$map,agg1$map," + user);
            case "retract_agg/Deduplicate":
            case "dedup_first/Deduplicate":
            case "dedup_last/Deduplicate": return split("deduplicate-state," + user);
            case "top_n/Rank": return split("data-state-with-append," + user);
            case "tumble/GlobalWindowAggregate":
            case "hop/GlobalWindowAggregate": return split("window-aggs,_timer_state/event_window-timers,_timer_state/processing_window-timers");
            case "join/Join": return split("left-records,right-records");
            case "interval_join/IntervalJoin":
                return split("IntervalJoinLeftCache,IntervalJoinRightCache,IntervalJoinLeftTimerState,IntervalJoinRightTimerState," + user);
            case "over/OverAggregate":
                return split("accState,inputState,lastTriggeringTsState,processedCountState,agg3$map," + user);
            default: return new ArrayList<>();
        }
    }

    static List<String> split(String s) {
        return new ArrayList<>(Arrays.asList(s.split(",")));
    }

    Map<String, Object> state(String statement, String kind) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("state_names", stateNames(statement, kind));
        switch (statement + "/" + kind) {
            case "group_agg/GroupAggregate": {
                Map<String, Object> acc = new TreeMap<>(), distinct = new TreeMap<>(), rows = new TreeMap<>(), views = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    GroupAcc a = groupAcc(e.getValue());
                    acc.put(label(e.getKey()), Arrays.asList(a.cnt, a.total, a.maxName, (long) a.names.size(), null));
                    Map<String, Object> bits = new TreeMap<>();
                    for (String n : a.names) bits.put(n, 1L);
                    views.put(label(e.getKey()), bits);
                    Map<String, Object> occ = new TreeMap<>();
                    for (SqlInput.Ev ev : e.getValue()) occ.merge(ev.name, 1L, (x, y) -> (Long) x + (Long) y);
                    distinct.put(label(e.getKey()), occ);
                    List<Object> r = new ArrayList<>();
                    for (SqlInput.Ev ev : e.getValue()) r.add(SqlInput.cells(ev.name, ev.v));
                    rows.put(label(e.getKey()), r);
                }
                s.put("key", "k");
                s.put("accState_fields", Arrays.asList("count1 BIGINT: COUNT(*)", "sum BIGINT: SUM(v)", "max STRING: MAX(name)",
                        "count BIGINT: COUNT(DISTINCT name)", "RAW MapView placeholder (NullSerializer, null): the view is distinctAcc_0"));
                s.put("accState", acc);
                s.put("distinctAcc_0", views);
                s.put("distinct_name_occurrences", distinct);
                s.put("input_rows_name_v", rows);
                break;
            }
            case "retract_agg/Deduplicate":
                s.put("key", "k");
                s.put("last_rows", lastRows(Arrays.asList("k", "v", "rt")));
                break;
            case "retract_agg/GroupAggregate": {
                Map<String, Object> acc = new TreeMap<>(), values = new TreeMap<>(), rows = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> b : lastByBucket().entrySet()) {
                    List<SqlInput.Ev> l = b.getValue();
                    Map<String, Object> multiset = new TreeMap<>(Comparator.comparingLong(Long::parseLong));
                    List<Object> r = new ArrayList<>();
                    for (SqlInput.Ev ev : l) {
                        multiset.merge(String.valueOf(ev.v), 1L, (x, y) -> (Long) x + (Long) y);
                        r.add(SqlInput.cells(ev.k, ev.v));
                    }
                    acc.put(label(b.getKey()), Arrays.asList(Arrays.asList(min(l), (long) multiset.size(), null),
                            Arrays.asList(max(l), (long) multiset.size(), null), (long) l.size()));
                    values.put(label(b.getKey()), multiset);
                    rows.put(label(b.getKey()), r);
                }
                s.put("key", "b = MOD(k, 4)");
                s.put("accState_fields", Arrays.asList("MinWithRetractAccumulator (min BIGINT, mapSize BIGINT, map RAW null): MIN(v)",
                        "MaxWithRetractAccumulator (max BIGINT, mapSize BIGINT, map RAW null): MAX(v)", "count1 BIGINT: COUNT(*)"));
                s.put("accState", acc);
                s.put("agg0$map", values);
                s.put("agg1$map", values);
                s.put("current_rows_k_v", rows);
                break;
            }
            case "dedup_first/Deduplicate": {
                Map<String, Object> seen = new TreeMap<>();
                for (Integer k : byKey.keySet()) seen.put(label(k), true);
                s.put("key", "k");
                s.put("seen", seen);
                break;
            }
            case "dedup_last/Deduplicate":
                s.put("key", "k");
                s.put("last_rows", lastRows(Arrays.asList("k", "name", "v", "price", "ratio", "flag", "seen_at", "rt")));
                break;
            case "top_n/Rank": {
                Map<String, Object> top = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    List<Object> l = new ArrayList<>();
                    for (SqlInput.Ev ev : top3(e.getValue())) l.add(obj("sort_key", SqlInput.cells(ev.v), "rows", Arrays.asList(SqlInput.cells(ev.k, ev.v, ev.name))));
                    top.put(label(e.getKey()), l);
                }
                s.put("key", "k");
                s.put("top_rows", top);
                break;
            }
            case "tumble/GlobalWindowAggregate":
            case "tumble/WindowAggregate": {
                Map<String, Object> pending = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    List<Object> l = new ArrayList<>();
                    for (Map.Entry<Long, List<SqlInput.Ev>> w : bucket(e.getValue(), 10_000L).entrySet()) {
                        long end = w.getKey() + 10_000L;
                        if (end - 1 > W) l.add(obj("slice_end", end, "window", Arrays.asList(w.getKey(), end), "cnt", (long) w.getValue().size(), "total", sum(w.getValue()),
                                "window-aggs", Arrays.asList((long) w.getValue().size(), sum(w.getValue()))));
                    }
                    if (!l.isEmpty()) pending.put(label(e.getKey()), l);
                }
                s.put("key", "k");
                s.put("window-aggs_fields", Arrays.asList("count1 BIGINT: COUNT(*)", "sum BIGINT: SUM(v)"));
                s.put("pending_slices", pending);
                break;
            }
            case "hop/GlobalWindowAggregate":
            case "hop/WindowAggregate": {
                Map<String, Object> slices = new TreeMap<>(), windows = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    List<Object> l = new ArrayList<>();
                    for (Map.Entry<Long, List<SqlInput.Ev>> sl : bucket(e.getValue(), 5_000L).entrySet()) {
                        long end = sl.getKey() + 5_000L;
                        // a slice is needed until the last window containing it (ending at end + 5 000) fired
                        if (end + 5_000L - 1 > W) l.add(obj("slice_end", end, "slice", Arrays.asList(sl.getKey(), end), "cnt", (long) sl.getValue().size(), "max_v", max(sl.getValue()),
                                "window-aggs", Arrays.asList((long) sl.getValue().size(), max(sl.getValue()))));
                    }
                    if (!l.isEmpty()) slices.put(label(e.getKey()), l);
                    List<Object> pw = new ArrayList<>();
                    for (Map.Entry<Long, List<SqlInput.Ev>> w : hopWindows(e.getValue()).entrySet()) {
                        long end = w.getKey() + 10_000L;
                        if (end - 1 > W) pw.add(obj("window", Arrays.asList(w.getKey(), end), "cnt", (long) w.getValue().size(), "max_v", max(w.getValue())));
                    }
                    if (!pw.isEmpty()) windows.put(label(e.getKey()), pw);
                }
                s.put("key", "k");
                s.put("window-aggs_fields", Arrays.asList("count1 BIGINT: COUNT(*)", "max BIGINT: MAX(v)"));
                s.put("pending_slices", slices);
                s.put("pending_windows", windows);
                break;
            }
            case "join/Join": {
                Map<String, Object> left = new TreeMap<>(), right = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    List<Object> l = new ArrayList<>();
                    for (SqlInput.Ev ev : e.getValue()) l.add(obj("row", obj("k", (long) ev.k, "v", ev.v, "price", SqlInput.cell(ev.price()), "flag", ev.flag()), "count", 1L));
                    left.put(label(e.getKey()), l);
                }
                for (Map.Entry<Integer, List<SqlInput.Dim>> e : dimsByKey.entrySet()) {
                    List<Object> l = new ArrayList<>();
                    for (SqlInput.Dim d : e.getValue()) l.add(obj("row", dimRow(d), "count", 1L));
                    right.put(label(e.getKey()), l);
                }
                s.put("key", "k");
                s.put("left_records", left);
                s.put("right_records", right);
                break;
            }
            case "interval_join/IntervalJoin": {
                long expired = W - 4000 - 1;
                Map<String, Object> left = new TreeMap<>(), right = new TreeMap<>(), leftEarliest = new TreeMap<>(), rightEarliest = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    if (e.getValue().get(0).rt + 8001 > W) throw new IllegalStateException("interval join model: key " + e.getKey() + "'s first event is too late for a cleanup before the savepoint");
                    Map<String, Object> cache = new TreeMap<>(Comparator.comparingLong(Long::parseLong));
                    for (SqlInput.Ev ev : e.getValue()) {
                        if (ev.rt <= expired) continue;
                        boolean joined = false;
                        for (SqlInput.Dim d : dimsByKey.getOrDefault(ev.k, new ArrayList<>())) joined |= Math.abs(ev.rt - d.rt) <= 4000;
                        cache.put(String.valueOf(ev.rt), Arrays.asList(obj("row", obj("k", (long) ev.k, "v", ev.v, "ratio", ev.ratio(), "rt", ev.rt), "emitted", joined)));
                    }
                    if (!cache.isEmpty()) {
                        left.put(label(e.getKey()), cache);
                        leftEarliest.put(label(e.getKey()), Long.parseLong(cache.keySet().iterator().next()));
                    }
                }
                for (Map.Entry<Integer, List<SqlInput.Dim>> e : dimsByKey.entrySet()) {
                    Map<String, Object> cache = new TreeMap<>(Comparator.comparingLong(Long::parseLong));
                    for (SqlInput.Dim d : e.getValue()) {
                        if (d.rt <= expired) continue;
                        cache.put(String.valueOf(d.rt), Arrays.asList(obj("row", obj("k", (long) d.k, "tier", d.tier(), "rt", d.rt), "emitted", false)));
                    }
                    if (!cache.isEmpty()) {
                        right.put(label(e.getKey()), cache);
                        rightEarliest.put(label(e.getKey()), Long.parseLong(cache.keySet().iterator().next()));
                    }
                }
                s.put("key", "k");
                s.put("expired_up_to", expired);
                s.put("left_cache", left);
                s.put("right_cache", right);
                // Each side's cleanup timer is re-registered at its earliest remaining row + 4 000 + 1
                // (relative size + minCleanUpInterval, 0 here, + 1): IntervalJoinRightTimerState
                // cleans the left cache, IntervalJoinLeftTimerState the right one; absent when empty.
                Map<String, Object> rightTimer = new TreeMap<>(), leftTimer = new TreeMap<>(), timers = new TreeMap<>();
                for (Map.Entry<String, Object> x : leftEarliest.entrySet()) rightTimer.put(x.getKey(), (Long) x.getValue() + 4001);
                for (Map.Entry<String, Object> x : rightEarliest.entrySet()) leftTimer.put(x.getKey(), (Long) x.getValue() + 4001);
                for (Integer k : byKey.keySet()) {
                    TreeSet<Long> t = new TreeSet<>();
                    if (rightTimer.containsKey(label(k))) t.add((Long) rightTimer.get(label(k)));
                    if (leftTimer.containsKey(label(k))) t.add((Long) leftTimer.get(label(k)));
                    if (!t.isEmpty()) timers.put(label(k), new ArrayList<>(t));
                }
                s.put("left_cache_earliest", leftEarliest);
                s.put("right_cache_earliest", rightEarliest);
                s.put("IntervalJoinRightTimerState", rightTimer);
                s.put("IntervalJoinLeftTimerState", leftTimer);
                s.put("pending_event_timers", timers);
                break;
            }
            case "over/OverAggregate": {
                Map<String, Object> input = new TreeMap<>(), acc = new TreeMap<>(), count = new TreeMap<>(), lastTs = new TreeMap<>(), timers = new TreeMap<>(), minMap = new TreeMap<>();
                for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) {
                    List<SqlInput.Ev> done = processed(e.getValue());
                    List<SqlInput.Ev> kept = new ArrayList<>(done.subList(Math.max(0, done.size() - 3), done.size()));
                    Map<String, Object> rows = new TreeMap<>(Comparator.comparingLong(Long::parseLong));
                    List<Object> pending = new ArrayList<>();
                    for (SqlInput.Ev ev : e.getValue()) {
                        boolean isPending = ev.rt > W;
                        if (isPending) pending.add(ev.rt);
                        if (isPending || kept.contains(ev)) rows.put(String.valueOf(ev.rt), Arrays.asList(obj("k", (long) ev.k, "v", ev.v, "rt", ev.rt)));
                    }
                    String l = label(e.getKey());
                    if (!rows.isEmpty()) input.put(l, rows);
                    if (!pending.isEmpty()) timers.put(l, pending);
                    if (!done.isEmpty()) {
                        acc.put(l, Arrays.asList((long) kept.size(), sum(kept), (long) kept.size(), Arrays.asList(min(kept), (long) kept.size(), null)));
                        count.put(l, (long) kept.size());
                        lastTs.put(l, done.get(done.size() - 1).rt);
                        Map<String, Object> mm = new TreeMap<>(Comparator.comparingLong(Long::parseLong));
                        for (SqlInput.Ev ev : kept) mm.merge(String.valueOf(ev.v), 1L, (x, y) -> (Long) x + (Long) y);
                        minMap.put(l, mm);
                    }
                }
                s.put("key", "k");
                s.put("inputState", input);
                s.put("accState_fields", Arrays.asList("count BIGINT: COUNT(v) (SUM(v) OVER is CASE WHEN COUNT(v) > 0 THEN $SUM0(v))",
                        "sum BIGINT: $SUM0(v)", "count1 BIGINT: COUNT(*)", "MinWithRetractAccumulator (min BIGINT, mapSize BIGINT, map RAW null): MIN(v)"));
                s.put("accState", acc);
                s.put("agg3$map", minMap);
                s.put("processedCountState", count);
                s.put("lastTriggeringTsState", lastTs);
                s.put("pending_event_timers", timers);
                break;
            }
            default:
                s.put("model", "none");
        }
        return s;
    }

    // ---- helpers ----

    static final class GroupAcc {
        long cnt, total;
        String maxName;
        TreeSet<String> names = new TreeSet<>();
    }

    static GroupAcc groupAcc(List<SqlInput.Ev> l) {
        GroupAcc a = new GroupAcc();
        for (SqlInput.Ev e : l) {
            a.cnt++;
            a.total += e.v;
            if (a.maxName == null || utf8Compare(e.name, a.maxName) > 0) a.maxName = e.name;
            a.names.add(e.name);
        }
        return a;
    }

    /** Flink compares STRING values by their UTF-8 bytes, unsigned. */
    static int utf8Compare(String a, String b) {
        byte[] x = a.getBytes(java.nio.charset.StandardCharsets.UTF_8), y = b.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        for (int i = 0; i < Math.min(x.length, y.length); i++) {
            int c = Integer.compare(x[i] & 0xff, y[i] & 0xff);
            if (c != 0) return c;
        }
        return Integer.compare(x.length, y.length);
    }

    static SqlInput.Ev last(List<SqlInput.Ev> l) {
        SqlInput.Ev best = l.get(0);
        for (SqlInput.Ev e : l) if (e.rt >= best.rt) best = e;
        return best;
    }

    Map<Integer, List<SqlInput.Ev>> lastByBucket() {
        Map<Integer, List<SqlInput.Ev>> out = new TreeMap<>();
        for (List<SqlInput.Ev> l : byKey.values()) {
            SqlInput.Ev e = last(l);
            out.computeIfAbsent(e.k % 4, b -> new ArrayList<>()).add(e);
        }
        return out;
    }

    Map<String, Object> lastRows(List<String> fields) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<Integer, List<SqlInput.Ev>> e : byKey.entrySet()) out.put(label(e.getKey()), evRow(last(e.getValue()), fields));
        return out;
    }

    static Map<String, Object> evRow(SqlInput.Ev e, List<String> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String f : fields) {
            switch (f) {
                case "k": m.put(f, (long) e.k); break;
                case "name": m.put(f, e.name); break;
                case "v": m.put(f, e.v); break;
                case "price": m.put(f, SqlInput.cell(e.price())); break;
                case "ratio": m.put(f, e.ratio()); break;
                case "flag": m.put(f, e.flag()); break;
                case "seen_at": m.put(f, SqlInput.cell(e.at())); break;
                case "rt": m.put(f, e.rt); break;
                default: throw new IllegalArgumentException(f);
            }
        }
        return m;
    }

    static Map<String, Object> dimRow(SqlInput.Dim d) {
        return obj("k", (long) d.k, "tier", d.tier(), "score", d.score(), "credit", SqlInput.cell(d.credit()), "vip", d.vip(), "since", SqlInput.cell(d.since()));
    }

    static List<Object> dedupOut(SqlInput.Ev e) {
        return SqlInput.cells(e.k, e.name, e.v, e.price(), e.ratio(), e.flag(), e.at());
    }

    static List<SqlInput.Ev> top3(List<SqlInput.Ev> l) {
        List<SqlInput.Ev> s = new ArrayList<>(l);
        s.sort((a, b) -> Long.compare(b.v, a.v));
        return s.subList(0, Math.min(3, s.size()));
    }

    /** OVER: the rows processed by the watermark. RowTimeRowsBoundedPrecedingFunction drops a row
     *  whose rowtime is not above its last triggering time, which starts at 0: a row at 0 is dropped. */
    static List<SqlInput.Ev> processed(List<SqlInput.Ev> l) {
        List<SqlInput.Ev> out = new ArrayList<>();
        for (SqlInput.Ev e : l) if (e.rt > 0 && e.rt <= W) out.add(e);
        return out;
    }

    static Map<Long, List<SqlInput.Ev>> bucket(List<SqlInput.Ev> l, long size) {
        Map<Long, List<SqlInput.Ev>> out = new TreeMap<>();
        for (SqlInput.Ev e : l) out.computeIfAbsent(Math.floorDiv(e.rt, size) * size, s -> new ArrayList<>()).add(e);
        return out;
    }

    /** HOP(5 s slide, 10 s size) windows by start, with their events. */
    static Map<Long, List<SqlInput.Ev>> hopWindows(List<SqlInput.Ev> l) {
        Map<Long, List<SqlInput.Ev>> out = new TreeMap<>();
        for (SqlInput.Ev e : l) {
            long last = Math.floorDiv(e.rt, 5_000L) * 5_000L;
            for (long start = last; start > e.rt - 10_000L; start -= 5_000L) out.computeIfAbsent(start, s -> new ArrayList<>()).add(e);
        }
        return out;
    }

    static long sum(List<SqlInput.Ev> l) {
        long s = 0;
        for (SqlInput.Ev e : l) s += e.v;
        return s;
    }

    static long max(List<SqlInput.Ev> l) {
        long m = Long.MIN_VALUE;
        for (SqlInput.Ev e : l) m = Math.max(m, e.v);
        return m;
    }

    static long min(List<SqlInput.Ev> l) {
        long m = Long.MAX_VALUE;
        for (SqlInput.Ev e : l) m = Math.min(m, e.v);
        return m;
    }

    static List<List<Object>> sorted(List<List<Object>> rows) {
        List<List<Object>> s = new ArrayList<>(rows);
        s.sort(Comparator.comparing(Json::write));
        return s;
    }

    static List<List<Object>> sortedChangelog(List<List<Object>> rows) {
        return sorted(rows);
    }

    /** The final table of a changelog: +I and +U add their row, -U and -D remove one equal row. */
    static List<List<Object>> materialize(List<List<Object>> changelog) {
        List<List<Object>> rows = new ArrayList<>();
        for (List<Object> c : changelog) {
            String kind = (String) c.get(0);
            List<Object> row = new ArrayList<>(c.subList(1, c.size()));
            if (kind.equals("+I") || kind.equals("+U")) rows.add(row);
            else if (!rows.remove(row)) throw new IllegalStateException("changelog retracts a row it never added: " + c);
        }
        return sorted(rows);
    }
}
