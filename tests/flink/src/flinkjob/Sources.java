package flinkjob;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;

/** The two sources' logic: the keyed events (with operator list state) and the broadcast rules. */
public final class Sources {
    private Sources() {}

    static void sleep() throws InterruptedException {
        Thread.sleep(20);
    }

    /**
     * Emits its partitions' events in order (after every bcast subtask applied the rules), then the
     * watermark 30 000, then idles until cancelled. Restore mode: one probe per owned key, the final
     * watermark, and it finishes. Checkpoint mode: a checkpoint completes half-way through.
     */
    public static final class Events implements SourceBody<Event> {
        private final Scenario sc;
        private transient ListState<Long> offsets;
        private transient List<Integer> owned;
        private transient long[] counts;
        private transient int subtask;
        private transient volatile boolean done;
        private volatile boolean running = true;

        public Events(Scenario sc) {
            this.sc = sc;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx, int subtask) throws Exception {
            this.subtask = subtask;
            owned = new ArrayList<>();
            for (int p = 0; p < sc.partitions; p++) if (p % sc.parallelism == subtask) owned.add(p);
            counts = new long[owned.size()];
            if (sc.mode.equals("size")) return;
            offsets = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("offsets", Types.LONG));
            if (ctx.isRestored()) {
                List<Object> got = new ArrayList<>();
                for (Long v : offsets.get()) got.add(v);
                Shared.record("src", "offsets", String.valueOf(subtask), got);
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            if (done) Shared.doneAtSnapshot.computeIfAbsent(ctx.getCheckpointId(), k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
            if (offsets == null) return;
            List<Long> list = new ArrayList<>();
            for (long c : counts) list.add(c);
            offsets.update(list);
        }

        @Override
        public void checkpointComplete(long id) {
            Shared.lastCompleted.accumulateAndGet(id, Math::max);
            java.util.concurrent.atomic.AtomicInteger n = Shared.doneAtSnapshot.get(id);
            if (n != null && n.get() == sc.parallelism) Shared.finalCheckpoint.compareAndSet(-1, id);
        }

        @Override
        public void run(Emitter<Event> out) throws Exception {
            if (sc.mode.equals("restore")) {
                synchronized (out.lock()) {
                    for (int k = 0; k < sc.numKeys; k++) {
                        if (sc.sourceSubtaskOf(k) == subtask) out.collect(new Event(-1, k, 0, "probe", true), Scenario.WATERMARK_AT_SNAPSHOT);
                    }
                    out.watermark(Scenario.FINAL_WATERMARK);
                }
                return;
            }
            if (!sc.mode.equals("size")) {
                while (running && Shared.rulesApplied.get() < Scenario.rules().size() * sc.parallelism) sleep();
            }
            List<Event> mine = new ArrayList<>();
            for (Event e : sc.events()) if (sc.sourceSubtaskOf(e.keyIndex) == subtask) mine.add(e);
            boolean waitHalfway = !sc.checkpoint.equals("none");
            for (int i = 0; i < mine.size() && running; i++) {
                if (waitHalfway && i == mine.size() / 2) {
                    while (running && Shared.lastCompleted.get() < 1) sleep();
                }
                Event e = mine.get(i);
                synchronized (out.lock()) {
                    out.collect(e, Scenario.timestampOf(e.seq));
                    counts[owned.indexOf(sc.partitionOf(e.keyIndex))]++;
                }
            }
            synchronized (out.lock()) {
                out.watermark(Scenario.WATERMARK_AT_SNAPSHOT);
                done = true;
            }
            Shared.sourcesDone.incrementAndGet();
            while (running) sleep();
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** The ten rule messages (put/remove, key, value), then the watermark 30 000; nothing on restore. */
    public static final class Rules implements SourceBody<Tuple3<String, String, String>> {
        private final Scenario sc;
        private volatile boolean running = true;

        public Rules(Scenario sc) {
            this.sc = sc;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx, int subtask) {}

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {}

        @Override
        public void run(Emitter<Tuple3<String, String, String>> out) throws Exception {
            if (sc.mode.equals("restore")) return;
            synchronized (out.lock()) {
                for (String[] r : Scenario.rules()) out.collect(Tuple3.of(r[0], r[1], r[2]), 0L);
                out.watermark(Scenario.WATERMARK_AT_SNAPSHOT);
            }
            while (running) sleep();
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
