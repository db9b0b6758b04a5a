package bench.peers.contract;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * What every peer and its Python driver agree on, read from {@value #RESOURCE} (the one source:
 * bench/peers/peer_contract.py reads the same file): the lines the driver waits for on the peer's
 * stdout and the columns of the files a rescale peer leaves.
 *
 * @param readyLine the line a rescale peer prints once it reads its topic
 * @param resultPrefix the start of a peer's last line, before a space and its result as JSON
 * @param traceColumns trace.csv's columns in the order they are written: each of {@link #TRACE_FIELDS} once
 * @param stateColumns state.csv's columns in the order they are written: each of {@link #STATE_FIELDS} once
 */
public record PeerContract(String readyLine, String resultPrefix, List<String> traceColumns,
                           List<String> stateColumns) {
    /** The resource in the contract's jar. */
    public static final String RESOURCE = "/bench/peers/contract/peer-contract.properties";

    /** The columns trace.csv has, named as {@link PeerOutputs.TraceRow}'s fields are written. */
    public static final Set<String> TRACE_FIELDS = Set.of("key", "unit", "worker", "release_ms", "processed_ms");

    /** The columns state.csv has, named as {@link PeerOutputs.StateRow}'s fields are written. */
    public static final Set<String> STATE_FIELDS = Set.of("key", "worker", "unit", "count", "sum", "first_ts_ms",
            "last_ts_ms");

    /** The contract as shipped. */
    public static final PeerContract SHIPPED = shipped();

    /**
     * The contract of {@code text} ({@code name = value} lines, {@code #} comments; the columns separated
     * by commas, spaces around names dropped).
     *
     * @throws IllegalArgumentException for a value missing, blank or holding a space (the lines), an
     *     unknown name, or columns other than the fields of their file
     */
    public static PeerContract parse(Reader text) {
        Properties read = new Properties();
        try {
            read.load(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Set<String> unknown = new TreeSet<>(read.stringPropertyNames());
        unknown.removeAll(Set.of("ready.line", "result.prefix", "trace.columns", "state.columns"));
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(RESOURCE + " names what the contract does not have: " + unknown);
        }
        return new PeerContract(word(read, "ready.line"), word(read, "result.prefix"),
                columns(read, "trace.columns", TRACE_FIELDS), columns(read, "state.columns", STATE_FIELDS));
    }

    /**
     * Prints the contract the file {@code argv[0]} gives, one part per line (the ready line, the result
     * prefix, the trace columns and the state columns, comma-separated): what the driver's test compares
     * with its own reading of the same file (tests/bench/test_rescale_peers.py).
     *
     * @throws IOException when the file cannot be read
     */
    public static void main(String[] argv) throws IOException {
        PeerContract contract = parse(Files.newBufferedReader(Path.of(argv[0]), StandardCharsets.UTF_8));
        System.out.println(contract.readyLine());
        System.out.println(contract.resultPrefix());
        System.out.println(String.join(",", contract.traceColumns()));
        System.out.println(String.join(",", contract.stateColumns()));
    }

    private static String word(Properties read, String name) {
        String value = read.getProperty(name, "").strip();
        if (value.isEmpty() || value.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException(RESOURCE + ": " + name + " must be one word, got '" + value + "'");
        }
        return value;
    }

    private static List<String> columns(Properties read, String name, Set<String> fields) {
        List<String> columns = Arrays.stream(read.getProperty(name, "").split(",")).map(String::strip).toList();
        if (columns.size() != fields.size() || !new HashSet<>(columns).equals(fields)) {
            throw new IllegalArgumentException(RESOURCE + ": " + name + " must name each of " + new TreeSet<>(fields)
                    + " once, got " + columns);
        }
        return columns;
    }

    private static PeerContract shipped() {
        try (InputStream in = PeerContract.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from the jar");
            }
            return parse(new InputStreamReader(in, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
