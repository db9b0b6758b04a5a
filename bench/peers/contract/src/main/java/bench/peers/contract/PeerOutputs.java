package bench.peers.contract;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * What a rescale peer tells its driver (bench/peers/rescale.py): {@link #READY_LINE} on stdout once it
 * reads its topic, and at its end the files of its {@code --out} folder (trace.csv, state.csv,
 * result.json), then {@link #RESULT_PREFIX} with the result as its last stdout line.
 */
public final class PeerOutputs {
    /** The stdout line that says the peer is ready for its input (the driver starts the replay). */
    public static final String READY_LINE = "RESCALE_PEER_READY";

    /** Start of the last stdout line, followed by the result JSON on one line. */
    public static final String RESULT_PREFIX = "RESCALE_PEER_RESULT ";

    private static final ObjectMapper JSON = new ObjectMapper();

    private PeerOutputs() {}

    /**
     * One processed tuple: a trace.csv row.
     *
     * @param key the key
     * @param unit the unit of state it was processed in (a key group, a partition of the repartition topic)
     * @param worker the worker (subtask, instance) that processed it
     * @param releaseMs the record's {@code release_ms} header, wall epoch ms; null when unknown
     * @param processedMs wall epoch ms when the key's state was updated
     */
    public record TraceRow(String key, int unit, int worker, Long releaseMs, long processedMs) {}

    /**
     * One key's final state: a state.csv row (the harness's per-key worker state).
     *
     * @param key the key
     * @param worker its owner at the end
     * @param unit its unit of state
     * @param count tuples counted
     * @param sum their counts' sum
     * @param firstTsMs the first tuple's Kafka timestamp, epoch ms
     * @param lastTsMs the last tuple's Kafka timestamp, epoch ms
     */
    public record StateRow(String key, int worker, int unit, long count, long sum, long firstTsMs, long lastTsMs) {}

    /** trace.csv in {@code out}: {@code key,unit,worker,release_ms,processed_ms}, release_ms empty when unknown. */
    public static void writeTrace(Path out, Iterable<TraceRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(out.resolve("trace.csv"), StandardCharsets.UTF_8)) {
            w.write("key,unit,worker,release_ms,processed_ms\n");
            for (TraceRow r : rows) {
                w.write(csv(r.key()) + "," + r.unit() + "," + r.worker() + ","
                        + (r.releaseMs() == null ? "" : r.releaseMs()) + "," + r.processedMs() + "\n");
            }
        }
    }

    /** state.csv in {@code out}: {@code key,worker,unit,count,sum,first_ts_ms,last_ts_ms}. */
    public static void writeState(Path out, Iterable<StateRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(out.resolve("state.csv"), StandardCharsets.UTF_8)) {
            w.write("key,worker,unit,count,sum,first_ts_ms,last_ts_ms\n");
            for (StateRow r : rows) {
                w.write(csv(r.key()) + "," + r.worker() + "," + r.unit() + "," + r.count() + "," + r.sum() + ","
                        + r.firstTsMs() + "," + r.lastTsMs() + "\n");
            }
        }
    }

    /**
     * result.json in {@code out} (indented), then {@link #RESULT_PREFIX} and the same JSON on one line
     * as the last line of stdout.
     */
    public static void writeResult(Path out, Map<String, Object> result) throws IOException {
        Files.writeString(out.resolve("result.json"),
                JSON.writerWithDefaultPrettyPrinter().writeValueAsString(result) + "\n");
        System.out.println(RESULT_PREFIX + JSON.writeValueAsString(result));
        System.out.flush();
    }

    /** A CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line break. */
    public static String csv(String s) {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            return s;
        }
        return '"' + s.replace("\"", "\"\"") + '"';
    }
}
