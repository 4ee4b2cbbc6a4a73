package flinkjob;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the operators tell the driver thread. The MiniCluster runs every task in this JVM, so static
 * fields are the simplest channel; reset() clears them between the runs of one process.
 */
public final class Shared {
    private Shared() {}

    /** Rule messages applied, summed over bcast subtasks; the sources wait for all of them. */
    public static final AtomicInteger rulesApplied = new AtomicInteger();
    /** Source subtasks that emitted everything (and the watermark). */
    public static final AtomicInteger sourcesDone = new AtomicInteger();
    /** Highest checkpoint completed (as told to source subtask 0). */
    public static final AtomicLong lastCompleted = new AtomicLong(-1);
    /** Per checkpoint: source subtasks that snapshotted after they were done. */
    public static final Map<Long, AtomicInteger> doneAtSnapshot = new ConcurrentHashMap<>();
    /** The first completed checkpoint that every source took after it was done. */
    public static final AtomicLong finalCheckpoint = new AtomicLong(-1);

    /** Restore mode: state read back, by operator role, then state name, then subtask or key label. */
    public static final Map<String, Map<String, Map<String, Object>>> restored = new ConcurrentHashMap<>();
    /** Restore mode: event-time timers that fired, per key label. */
    public static final Map<String, List<Long>> firedTimers = new ConcurrentHashMap<>();
    /** Restore mode: windows that fired: label, start, end, value. */
    public static final List<Object[]> firedWindows = new ArrayList<>();

    /** SQL mode: dim source subtasks that emitted everything. */
    public static final AtomicInteger dimDone = new AtomicInteger();
    /** SQL mode: what each statement's sink received, per statement: [row kind, cells...]. */
    public static final Map<String, List<List<Object>>> sqlReceived = new ConcurrentHashMap<>();

    public static void reset() {
        dimDone.set(0);
        sqlReceived.clear();
        rulesApplied.set(0);
        sourcesDone.set(0);
        lastCompleted.set(-1);
        doneAtSnapshot.clear();
        finalCheckpoint.set(-1);
        restored.clear();
        firedTimers.clear();
        synchronized (firedWindows) {
            firedWindows.clear();
        }
    }

    public static void record(String role, String state, String where, Object value) {
        restored.computeIfAbsent(role, r -> new ConcurrentHashMap<>())
                .computeIfAbsent(state, s -> new ConcurrentHashMap<>())
                .put(where, value);
    }

    public static Map<String, Object> sorted(Map<String, Object> m) {
        return m == null ? new TreeMap<>() : new TreeMap<>(m);
    }
}
