package bench.peers.kstreams;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** The peer's files in {@code --out}: trace.csv, state.csv and result.json (the contract's formats). */
public final class Outputs {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Outputs() {}

    /** trace.csv: {@code key,unit,worker,release_ms,processed_ms}, release_ms empty when unknown. */
    public static void writeTrace(Path out, Iterable<Progress.TraceRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(out.resolve("trace.csv"), StandardCharsets.UTF_8)) {
            w.write("key,unit,worker,release_ms,processed_ms\n");
            for (Progress.TraceRow r : rows) {
                w.write(csv(r.key()) + "," + r.unit() + "," + r.worker() + ","
                        + (r.releaseMs() == null ? "" : r.releaseMs()) + "," + r.processedMs() + "\n");
            }
        }
    }

    /** state.csv: {@code key,worker,unit,count,sum,first_ts_ms,last_ts_ms}, one row per key. */
    public static void writeState(Path out, List<Workers.StateRow> rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(out.resolve("state.csv"), StandardCharsets.UTF_8)) {
            w.write("key,worker,unit,count,sum,first_ts_ms,last_ts_ms\n");
            for (Workers.StateRow r : rows) {
                KeyState s = r.state();
                w.write(csv(r.key()) + "," + r.worker() + "," + r.unit() + "," + s.count() + "," + s.sum() + ","
                        + s.firstTsMs() + "," + s.lastTsMs() + "\n");
            }
        }
    }

    /** result.json; returns the same JSON on one line. */
    public static String writeResult(Path out, Map<String, Object> result) throws IOException {
        String line = JSON.writeValueAsString(result);
        Files.writeString(out.resolve("result.json"), JSON.writerWithDefaultPrettyPrinter().writeValueAsString(result) + "\n");
        return line;
    }

    /** A CSV field, quoted when it holds a comma, a quote or a line break. */
    static String csv(String s) {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            return s;
        }
        return '"' + s.replace("\"", "\"\"") + '"';
    }
}
