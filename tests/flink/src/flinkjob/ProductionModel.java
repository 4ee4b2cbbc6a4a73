package flinkjob;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The state production mode's job holds at its savepoint, from its input alone (expected.json). */
final class ProductionModel {
    private ProductionModel() {}

    static Map<String, Object> op(String uid, String role, Object... kv) {
        Map<String, Object> m = Model.obj("uid", uid, "role", role);
        m.putAll(Model.obj(kv));
        return m;
    }

    static Map<String, Object> expected(Scenario sc) {
        List<Production.ClickEvent> events = Production.events(sc);
        long wm = Production.watermark(sc);
        Map<String, List<Production.ClickEvent>> byUser = new TreeMap<>();
        for (Production.ClickEvent e : events) byUser.computeIfAbsent(e.user, u -> new ArrayList<>()).add(e);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("scenario", Model.obj("knobs", sc.knobs, "users", sc.numKeys, "events", sc.numEvents,
                "partitions", sc.partitions, "topic", Production.TOPIC, "user_format", Production.USER_FORMAT,
                "base_ms", Production.BASE, "spacing_ms", Production.SPACING_MS, "watermark_at_savepoint", wm,
                "session_gap_ms", Production.GAP_MS, "cep_within_ms", Production.WITHIN_MS,
                "join_bounds_ms", Arrays.asList(Production.JOIN_LOWER_MS, Production.JOIN_UPPER_MS),
                "sink_part_size", Production.PART_SIZE,
                "serialization_config", Arrays.asList(Production.SERIALIZATION_CONFIG_ORGANIC, Production.SERIALIZATION_CONFIG_DEVICE)));
        Map<String, Object> ops = new LinkedHashMap<>();

        // legacy-offsets: each subtask's partitions, offset of the last record emitted
        Map<String, Object> offsets = new TreeMap<>();
        Map<Integer, Long> last = new TreeMap<>();
        for (Production.ClickEvent e : events) last.put(e.partition, e.offset);
        for (int s = 0; s < sc.parallelism; s++) {
            List<Object> l = new ArrayList<>();
            for (Map.Entry<Integer, Long> e : last.entrySet())
                if (e.getKey() % sc.parallelism == s) l.add(Arrays.asList(Production.TOPIC, e.getKey(), e.getValue()));
            offsets.put(String.valueOf(s), l);
        }
        ops.put("legacy-offsets", op("legacy-offsets", "legacy-offsets", "name", "Source: legacy-offsets",
                "operator_state", Model.obj("topic-partition-offset-states", Model.obj("distribution", "UNION",
                        "element", "Tuple2<TopicPartitionLike (Kryo), Long> as [topic, partition, offset]",
                        "subtasks", offsets))));

        // kryo-proc
        Map<String, Object> profiles = new TreeMap<>(), devices = new TreeMap<>(), logins = new TreeMap<>();
        for (Map.Entry<String, List<Production.ClickEvent>> u : byUser.entrySet()) {
            Production.UserProfile p = null;
            Production.DeviceInfo[] d = {null};
            Integer n = null;
            for (Production.ClickEvent e : u.getValue()) {
                p = Production.step(p, d, n, e);
                if (e.type.equals("login")) n = n == null ? 1 : n + 1;
            }
            Map<String, Object> attribution;
            if (p.attribution instanceof Production.CampaignAttribution) {
                Production.CampaignAttribution c = (Production.CampaignAttribution) p.attribution;
                attribution = Model.obj("class", Production.CampaignAttribution.class.getName(), "kryo_class_form", "class name",
                        "campaign", c.campaign, "touchpoints", c.touchpoints);
            } else {
                Production.OrganicAttribution o = (Production.OrganicAttribution) p.attribution;
                attribution = Model.obj("class", Production.OrganicAttribution.class.getName(), "kryo_class_form", "registration id",
                        "referrer", o.referrer);
            }
            profiles.put(u.getKey(), Model.obj("sessionId", p.sessionId.toString(),
                    "lastCoupon", p.lastCoupon.orElse(null), "lastCoupon_present", p.lastCoupon.isPresent(),
                    "attribution", attribution, "eventCount", p.eventCount, "totalAmount", p.totalAmount, "lastType", p.lastType));
            devices.put(u.getKey(), d[0] == null ? null
                    : Model.obj("model", d[0].model, "os", d[0].os, "screenWidth", d[0].screenWidth));
            logins.put(u.getKey(), n);
        }
        ops.put("kryo-proc", op("kryo-proc", "kryo-proc", "name", "kryo-proc", "keyed_state", Model.obj(
                "profile", Model.obj("kind", "VALUE", "serializer", "PojoSerializer (sessionId, lastCoupon, attribution: KryoSerializer)", "values", profiles),
                "device", Model.obj("kind", "VALUE", "serializer", "KryoSerializer", "values", devices),
                "logins", Model.obj("kind", "VALUE", "serializer", "IntSerializer", "values", logins))));

        // cep: carts waiting for a pay (not yet timed out), every user's watermark timer
        Map<String, Object> pending = new TreeMap<>();
        List<Object> cepTimers = new ArrayList<>();
        for (Map.Entry<String, List<Production.ClickEvent>> u : byUser.entrySet()) {
            List<Long> carts = new ArrayList<>();
            for (Production.ClickEvent e : u.getValue()) {
                carts.removeIf(c -> e.ts - c >= Production.WITHIN_MS);
                if (e.type.equals("pay")) carts.clear();
                else if (e.type.equals("cart")) carts.add(e.ts);
            }
            carts.removeIf(c -> wm - c >= Production.WITHIN_MS);
            if (!carts.isEmpty()) pending.put(u.getKey(), carts); // CEP clears a key's NFA state left at its start
            // every event processed renews the start partial match, which registers a timer at its timestamp + within
            // (CepOperator.processEvent); those after the watermark wait
            java.util.TreeSet<Long> at = new java.util.TreeSet<>();
            for (Production.ClickEvent e : u.getValue())
                if (e.ts + Production.WITHIN_MS > wm) at.add(e.ts + Production.WITHIN_MS);
            for (long t : at) cepTimers.add(Model.obj("key", u.getKey(), "timestamp", t));
        }
        ops.put("cep", op("cep", "cep", "name", "cep", "pending_partial_matches", Model.obj(
                "what", "user -> start timestamps of the partial matches waiting in state pay (the cart that began each); users without one have no NFA state",
                "values", pending), "timers", Model.obj("event_time", Model.obj("service", "watermark-callbacks", "values", cepTimers))));

        // session-win: the open session of each user whose last session has not fired
        Map<String, Object> sessions = new TreeMap<>();
        List<Object> sessionTimers = new ArrayList<>();
        for (Map.Entry<String, List<Production.ClickEvent>> u : byUser.entrySet()) {
            List<Production.ClickEvent> cur = new ArrayList<>();
            for (Production.ClickEvent e : u.getValue()) {
                // TimeWindow.intersects is inclusive: a window [ts, ts+gap) merges when ts <= end
                if (!cur.isEmpty() && e.ts > cur.get(cur.size() - 1).ts + Production.GAP_MS) cur.clear();
                cur.add(e);
            }
            long start = cur.get(0).ts, end = cur.get(cur.size() - 1).ts + Production.GAP_MS;
            if (end - 1 <= wm) continue;
            List<Object> contents = new ArrayList<>();
            for (Production.ClickEvent e : cur) contents.add(Arrays.asList(e.type, e.ts, e.amount));
            sessions.put(u.getKey(), Model.obj("session_window", Arrays.asList(start, end),
                    "state_window", Arrays.asList(start, start + Production.GAP_MS), "contents", contents));
            sessionTimers.add(Model.obj("key", u.getKey(), "timestamp", end - 1, "window", Arrays.asList(start, end)));
        }
        ops.put("session-win", op("session-win", "session-win", "name", "session-win", "open_sessions", Model.obj(
                "what", "user -> session window, state window (namespace of window-contents), contents [type, ts, amount]",
                "values", sessions), "timers", Model.obj("event_time", Model.obj("service", "window-timers", "values", sessionTimers))));

        // interval-join: buffered entries whose cleanup timer is past the watermark
        Map<String, Object> left = new TreeMap<>(), right = new TreeMap<>();
        List<Object> joinTimers = new ArrayList<>();
        for (Map.Entry<String, List<Production.ClickEvent>> u : byUser.entrySet()) {
            List<Object> l = new ArrayList<>(), r = new ArrayList<>();
            for (Production.ClickEvent e : u.getValue()) {
                if (e.type.equals("cart") && e.ts + Production.JOIN_UPPER_MS > wm) {
                    l.add(Arrays.asList(e.ts, e.amount));
                    joinTimers.add(Model.obj("key", u.getKey(), "timestamp", e.ts + Production.JOIN_UPPER_MS, "side", "left"));
                }
                if (e.type.equals("pay") && e.ts - Production.JOIN_LOWER_MS > wm) {
                    r.add(Arrays.asList(e.ts, e.amount));
                    joinTimers.add(Model.obj("key", u.getKey(), "timestamp", e.ts - Production.JOIN_LOWER_MS, "side", "right"));
                }
            }
            if (!l.isEmpty()) left.put(u.getKey(), l);
            if (!r.isEmpty()) right.put(u.getKey(), r);
        }
        ops.put("interval-join", op("interval-join", "interval-join", "name", "interval-join",
                "keyed_state", Model.obj("LEFT_BUFFER", Model.obj("what", "carts: user -> [[ts, amount]], has_been_joined false", "values", left),
                        "RIGHT_BUFFER", Model.obj("what", "pays: user -> [[ts, amount]], has_been_joined false", "values", right)),
                "timers", Model.obj("event_time", Model.obj("service", "CLEANUP_TIMER", "values", joinTimers))));

        // file-source and file-sink: every line read and written; the sink's parts by size
        List<Object> files = new ArrayList<>();
        Map<String, Object> buckets = new TreeMap<>();
        for (int f = 0; f < Production.FILES.length; f++) {
            long size = 0, cur = -1;
            List<Long> rolled = new ArrayList<>();
            for (int n = 0; n < Production.FILE_LINES[f]; n++) {
                long len = Production.fileLine(f, n).getBytes(StandardCharsets.UTF_8).length + 1;
                size += len;
                if (cur < 0) cur = 0;
                else if (cur > Production.PART_SIZE) { // DefaultRollingPolicy.shouldRollOnEvent: size > part size
                    rolled.add(cur);
                    cur = 0;
                }
                cur += len;
            }
            if (cur > Production.PART_SIZE) { // shouldRollOnCheckpoint: the same test at the savepoint
                rolled.add(cur);
                cur = -1;
            }
            files.add(Model.obj("file", Production.FILES[f] + ".txt", "lines", Production.FILE_LINES[f], "bytes", size));
            buckets.put(Production.FILES[f], Model.obj("in_progress_size", cur < 0 ? null : cur, "pending_part_sizes", rolled));
        }
        List<Object> processed = new ArrayList<>();
        for (String f : Production.FILES) processed.add(f + ".txt");
        ops.put("file-source", op("file-source", "file-source", "name", "Source: file-source",
                "input_files", files, "reader_splits", new ArrayList<>(),
                "coordinator", Model.obj("what", "continuous enumerator: no pending split, every file a processed path",
                        "pending_splits", new ArrayList<>(), "processed_paths", processed)));
        ops.put("file-sink", op("file-sink", "file-sink", "name", "file-sink: Writer",
                "buckets", Model.obj("what", "bucket id (input file stem) -> the writer's in-progress part size (null: none) and the "
                        + "committer's pending (rolled) part sizes, whichever subtask wrote it", "values", buckets)));
        out.put("operators", ops);
        return out;
    }
}
