package groupings;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The groupings of this port by name, as {@code groupings.create_grouping} names them: the four
 * reference groupings, SLB's two (D_CHOICES, W_CHOICES) and the two that own groups of keys.
 */
public final class Groupings {
    /**
     * The resource (beside this class) that lists the port's groupings and their parameters: the one
     * list that this class and the Python side (bench/topology/jvm_stage.py) both read.
     */
    public static final String PORT_RESOURCE = "java-port.properties";

    private static final Map<String, List<String>> PORT = readPort();

    /** The port's groupings, in the order of {@link #PORT_RESOURCE}. */
    public static final List<String> NAMES = List.copyOf(PORT.keySet());

    /**
     * The parameters each grouping of this port takes (all integers), for the groupings that take
     * any; a grouping not listed takes none here (SLB's {@code t} and {@code epsilon} are fixed at
     * the reference's values in this port).
     */
    public static final Map<String, List<String>> PARAMETERS = withParameters(PORT);

    private Groupings() {}

    /**
     * Parses {@link #PORT_RESOURCE}'s format: one line per grouping, {@code NAME = p1, p2} (nothing
     * after {@code =}: no parameter); blank lines and lines starting with {@code #} are skipped.
     *
     * @return grouping name -> its parameters, in the order of the lines
     * @throws IllegalArgumentException for a line without {@code =}, a name given twice or an empty parameter name
     */
    public static Map<String, List<String>> parsePort(BufferedReader lines) throws IOException {
        Map<String, List<String>> port = new LinkedHashMap<>();
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            String text = line.strip();
            if (text.isEmpty() || text.startsWith("#")) {
                continue;
            }
            int equals = text.indexOf('=');
            if (equals < 0) {
                throw new IllegalArgumentException("a line of " + PORT_RESOURCE + " without '=': " + text);
            }
            String name = text.substring(0, equals).strip();
            String rest = text.substring(equals + 1).strip();
            List<String> parameters = rest.isEmpty() ? List.of()
                    : Arrays.stream(rest.split(",", -1)).map(String::strip).toList();
            if (parameters.contains("")) {
                throw new IllegalArgumentException("an empty parameter name for " + name + " in " + PORT_RESOURCE);
            }
            if (port.put(name, parameters) != null) {
                throw new IllegalArgumentException(PORT_RESOURCE + " names " + name + " twice");
            }
        }
        return port;
    }

    private static Map<String, List<String>> readPort() {
        try (InputStream resource = Groupings.class.getResourceAsStream(PORT_RESOURCE)) {
            if (resource == null) {
                throw new IllegalStateException(PORT_RESOURCE + " is missing beside " + Groupings.class.getName());
            }
            return parsePort(new BufferedReader(new InputStreamReader(resource, StandardCharsets.UTF_8)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Map<String, List<String>> withParameters(Map<String, List<String>> port) {
        Map<String, List<String>> parameters = new LinkedHashMap<>();
        port.forEach((name, names) -> {
            if (!names.isEmpty()) {
                parameters.put(name, names);
            }
        });
        return Map.copyOf(parameters);
    }

    /**
     * One instance of grouping {@code name} (reference defaults; D_CHOICES and W_CHOICES with SLB's
     * T = 10 and epsilon = 0.0001; KEY_GROUP with Flink's default max parallelism, VNODE with 256
     * vnodes) for {@code numWorkers} workers.
     *
     * @param startMs when the instance was prepared: DYNAMIC_KEY's warm-up and cycle-0 anchor
     * @throws IllegalArgumentException for an unknown name
     */
    public static ReferenceGrouping create(String name, int numWorkers, long startMs) {
        return create(name, numWorkers, startMs, Map.of());
    }

    /**
     * One instance of grouping {@code name} with {@code params} (a subset of its {@link #PARAMETERS};
     * the others keep their defaults, as in {@code groupings.create_grouping}).
     *
     * @throws IllegalArgumentException for an unknown name, a parameter the grouping does not take
     *     here, or a value its constructor refuses
     */
    public static ReferenceGrouping create(String name, int numWorkers, long startMs, Map<String, Long> params) {
        if (!NAMES.contains(name)) {
            throw new IllegalArgumentException("unknown grouping " + name + "; expected one of " + NAMES);
        }
        List<String> known = PARAMETERS.getOrDefault(name, List.of());
        TreeSet<String> unknown = new TreeSet<>(params.keySet());
        unknown.removeAll(known);
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(name + " takes no parameter " + unknown + " in the Java port; it takes "
                    + (known.isEmpty() ? "none" : known));
        }
        switch (name) {
            case "SHUFFLE":
                return new ShuffleGrouping(numWorkers, startMs);
            case "KEY":
                return new KeyGrouping(numWorkers, startMs);
            case "PARTIAL_KEY":
                return new PartialKeyGrouping(numWorkers, startMs);
            case "DYNAMIC_KEY":
                return new DynamicKeyGrouping(numWorkers, startMs,
                        intParam(params, "distinct_key_count", DynamicKeyGrouping.DEFAULT_DISTINCT_KEY_COUNT),
                        params.getOrDefault("warm_up_ms", DynamicKeyGrouping.DEFAULT_WARM_UP_MS),
                        params.getOrDefault("check_interval_ms", DynamicKeyGrouping.DEFAULT_CHECK_INTERVAL_MS),
                        intParam(params, "initial_pool_size", DynamicKeyGrouping.DEFAULT_INITIAL_POOL_SIZE),
                        params.getOrDefault("maintenance_period_ms", DynamicKeyGrouping.DEFAULT_MAINTENANCE_PERIOD_MS),
                        intParam(params, "old_promotion_every", DynamicKeyGrouping.DEFAULT_OLD_PROMOTION_EVERY));
            case "D_CHOICES":
                return new DChoicesGrouping(numWorkers, startMs);
            case "W_CHOICES":
                return new WChoicesGrouping(numWorkers, startMs);
            case "KEY_GROUP":
                return new KeyGroupGrouping(numWorkers, startMs, intParam(params, "max_parallelism",
                        KeyGroupGrouping.defaultMaxParallelism(numWorkers)));
            case "VNODE":
                return new VNodeGrouping(numWorkers, startMs, intParam(params, "vnodes", VNodeGrouping.DEFAULT_VNODES));
            default:
                throw new AssertionError(name + " is in NAMES but has no case");
        }
    }

    private static int intParam(Map<String, Long> params, String name, int fallback) {
        Long value = params.get(name);
        if (value == null) {
            return fallback;
        }
        if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(name + " must fit in an int, got " + value);
        }
        return value.intValue();
    }
}
