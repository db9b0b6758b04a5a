package bench.peers.contract;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * What a peer tells its driver (bench/peers/rescale.py, bench/peers/storm.py), in the terms of the
 * {@link PeerContract}: a rescale peer prints {@link #READY_LINE} on stdout once it reads its topic,
 * and at its end writes the files of its {@code --out} folder (trace.csv, state.csv, result.json);
 * every peer prints its result last ({@link #printResult}).
 */
public final class PeerOutputs {
    /** The stdout line that says the peer is ready for its input (the driver starts the replay). */
    public static final String READY_LINE = PeerContract.SHIPPED.readyLine();

    /** Start of the last stdout line, followed by a space and the result JSON on one line. */
    public static final String RESULT_PREFIX = PeerContract.SHIPPED.resultPrefix();

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

    /** trace.csv in {@code out}: the contract's trace columns, release_ms empty when unknown. */
    public static void writeTrace(Path out, Iterable<TraceRow> rows) throws IOException {
        writeCsv(out.resolve("trace.csv"), PeerContract.SHIPPED.traceColumns(), rows, r -> Map.of(
                "key", csv(r.key()), "unit", String.valueOf(r.unit()), "worker", String.valueOf(r.worker()),
                "release_ms", r.releaseMs() == null ? "" : String.valueOf(r.releaseMs()),
                "processed_ms", String.valueOf(r.processedMs())));
    }

    /** state.csv in {@code out}: the contract's state columns. */
    public static void writeState(Path out, Iterable<StateRow> rows) throws IOException {
        writeCsv(out.resolve("state.csv"), PeerContract.SHIPPED.stateColumns(), rows, r -> Map.of(
                "key", csv(r.key()), "worker", String.valueOf(r.worker()), "unit", String.valueOf(r.unit()),
                "count", String.valueOf(r.count()), "sum", String.valueOf(r.sum()),
                "first_ts_ms", String.valueOf(r.firstTsMs()), "last_ts_ms", String.valueOf(r.lastTsMs())));
    }

    /** A CSV file: the header {@code columns}, then each row's fields ({@code fields}: column -> text) in
     * that order. */
    static <T> void writeCsv(Path file, List<String> columns, Iterable<T> rows, Function<T, Map<String, String>> fields)
            throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            w.write(String.join(",", columns) + "\n");
            for (T row : rows) {
                Map<String, String> byColumn = fields.apply(row);
                w.write(columns.stream().map(byColumn::get).collect(Collectors.joining(",")) + "\n");
            }
        }
    }

    /**
     * result.json in {@code out} (indented), then the result line ({@link #printResult}).
     */
    public static void writeResult(Path out, Map<String, Object> result) throws IOException {
        Files.writeString(out.resolve("result.json"),
                JSON.writerWithDefaultPrettyPrinter().writeValueAsString(result) + "\n");
        printResult(result);
    }

    /** {@link #RESULT_PREFIX}, a space and {@code result} as JSON on one line: a peer's last stdout line. */
    public static void printResult(Object result) throws IOException {
        System.out.println(RESULT_PREFIX + " " + JSON.writeValueAsString(result));
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
