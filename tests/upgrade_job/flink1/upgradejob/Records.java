package upgradejob;

import java.util.List;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;

/** Emits its records (subtask 0), then idles until cancelled (or ends, when told). */
final class Records extends RichParallelSourceFunction<Tuple2<String, Integer>> {
    private final List<Tuple2<String, Integer>> records;
    private final boolean idle;
    private volatile boolean running = true;

    Records(List<Tuple2<String, Integer>> records, boolean idle) {
        this.records = records;
        this.idle = idle;
    }

    @Override
    public void run(SourceContext<Tuple2<String, Integer>> ctx) throws Exception {
        if (getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            synchronized (ctx.getCheckpointLock()) {
                for (Tuple2<String, Integer> r : records) ctx.collect(r);
            }
        }
        while (idle && running) Thread.sleep(20);
    }

    @Override
    public void cancel() {
        running = false;
    }
}
