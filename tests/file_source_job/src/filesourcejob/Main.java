package filesourcejob;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A FileSource job at parallelism 1 (uid "file-source"), for the test that a FileSource position
 * rewritten by `statectl bootstrap --base` is where the restored job resumes.
 *
 * <pre>
 *   save INPUT_DIR OUT_DIR N     read slowly; once N lines passed, take a canonical savepoint,
 *                                write its path to OUT_DIR/savepoint.txt, cancel
 *   restore SAVEPOINT OUT_DIR    restore (all state claimed), read to the end, write every line
 *                                the job emitted to OUT_DIR/lines.txt in order
 * </pre>
 */
public final class Main {
    static final AtomicLong PASSED = new AtomicLong();
    static final List<String> EMITTED = Collections.synchronizedList(new ArrayList<>());

    private Main() {}

    public static void main(String[] args) throws Exception {
        boolean save = args[0].equals("save");
        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "none");
        if (!save) {
            conf.setString("execution.state-recovery.path", args[1]);
            conf.setString("execution.state-recovery.ignore-unclaimed-state", "false");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(1);
        String input = save ? args[1] : "unused";
        FileSource<String> source = FileSource.forRecordStreamFormat(new TextLineInputFormat(), new Path(input)).build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "file-source").uid("file-source")
                .map(save ? new Slow() : new Record()).uid("mark")
                .sinkTo(new DiscardingSink<>()).uid("sink");
        if (save) {
            saveAfter(env.executeAsync("file-source save"), args[2], Long.parseLong(args[3]));
        } else {
            env.execute("file-source restore");
            Files.write(Paths.get(args[2], "lines.txt"), String.join("\n", EMITTED).getBytes(StandardCharsets.UTF_8));
        }
    }

    static void saveAfter(JobClient client, String out, long lines) throws Exception {
        while (PASSED.get() < lines) Thread.sleep(10);
        String path = null;
        for (int attempt = 0; path == null; attempt++) {
            try {
                path = client.triggerSavepoint(Paths.get(out, "savepoints").toUri().toString(),
                        SavepointFormatType.CANONICAL).get();
            } catch (java.util.concurrent.ExecutionException e) {
                if (attempt >= 100) throw e;
                Thread.sleep(100);
            }
        }
        client.cancel().get();
        Files.write(Paths.get(out, "savepoint.txt"), path.getBytes(StandardCharsets.UTF_8));
    }

    /** Lets lines pass slowly, so the savepoint finds the reader mid-file. */
    static final class Slow implements MapFunction<String, String> {
        @Override
        public String map(String line) throws Exception {
            Thread.sleep(5);
            PASSED.incrementAndGet();
            return line;
        }
    }

    /** Records every line the restored job emits. */
    static final class Record implements MapFunction<String, String> {
        @Override
        public String map(String line) {
            EMITTED.add(line);
            return line;
        }
    }
}
