package bench.peers.flink;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** The peer's files in {@code --out} (the rescale peers' contract): trace.csv, state.csv, result.json. */
public final class Outputs {
    /** Start of the last stdout line, followed by the result JSON. */
    public static final String RESULT_PREFIX = "RESCALE_PEER_RESULT ";
    private static final ObjectMapper JSON = new ObjectMapper();

    private Outputs() {}

    /** trace.csv: {@code key,unit,worker,release_ms,processed_ms}, one row per tuple, release_ms empty when unknown. */
    public static void trace(Path file, Iterable<Progress.TraceRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("key,unit,worker,release_ms,processed_ms\n");
            for (Progress.TraceRow r : rows) {
                w.write(csv(r.key()) + "," + r.unit() + "," + r.worker() + ","
                        + (r.releaseMs() < 0 ? "" : Long.toString(r.releaseMs())) + "," + r.processedMs() + "\n");
            }
        }
    }

    /** state.csv: {@code key,worker,unit,count,sum,first_ts_ms,last_ts_ms}, one row per key. */
    public static void state(Path file, List<Records.StateRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("key,worker,unit,count,sum,first_ts_ms,last_ts_ms\n");
            for (Records.StateRow r : rows) {
                w.write(csv(r.key) + "," + r.worker + "," + r.unit + "," + r.count + "," + r.sum + ","
                        + r.firstTsMs + "," + r.lastTsMs + "\n");
            }
        }
    }

    /** Writes result.json and prints {@value #RESULT_PREFIX}{@code <json>} as the last stdout line. */
    public static void result(Path file, Map<String, Object> result) throws IOException {
        String json = JSON.writeValueAsString(result);
        Files.writeString(file, json + "\n");
        System.out.println(RESULT_PREFIX + json);
        System.out.flush();
    }

    /** A CSV field, quoted (RFC 4180) when it holds a comma, quote or line break. */
    static String csv(String s) {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            return s;
        }
        return "\"" + s.replace("\"", "\"\"") + "\"";
    }
}
