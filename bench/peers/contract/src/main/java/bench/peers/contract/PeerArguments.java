package bench.peers.contract;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A peer's command line as the driver writes it (bench/peers/rescale.py): {@code --name value} pairs
 * only, each name one the peer knows. The options every peer takes are {@link #COMMON}; a peer adds
 * its system's settings.
 */
public final class PeerArguments {
    /**
     * The options of every rescale peer: {@code --bootstrap --topic --records --key-field --count-field
     * --workers --rescale --t0-ms --out --timeout-s --protocol}.
     */
    public static final Set<String> COMMON = Set.of("bootstrap", "topic", "records", "key-field", "count-field",
            "workers", "rescale", "t0-ms", "out", "timeout-s", "protocol");

    private final Map<String, String> values;

    private PeerArguments(Map<String, String> values) {
        this.values = values;
    }

    /**
     * Parses {@code argv} against {@link #COMMON} and the peer's own {@code names}.
     *
     * @throws IllegalArgumentException (one-line message) an unknown option, a valueless one, a word
     *     that is not an option
     */
    public static PeerArguments parse(String[] argv, Set<String> names) {
        Set<String> known = new TreeSet<>(COMMON);
        known.addAll(names);
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            String name = argv[i].startsWith("--") ? argv[i].substring(2) : "";
            if (!known.contains(name)) {
                throw new IllegalArgumentException("unknown option '" + argv[i] + "' (known: --"
                        + String.join(", --", known) + ")");
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("option " + argv[i] + " needs a value");
            }
            values.put(name, argv[i + 1]);
        }
        return new PeerArguments(values);
    }

    /** The value of {@code --name}, or {@code fallback} when it is not given (null: none). */
    public String text(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    /**
     * The value of {@code --name}.
     *
     * @throws IllegalArgumentException when it is missing or blank
     */
    public String required(String name) {
        String v = values.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }

    /**
     * The integer value of {@code --name}, or {@code fallback} when it is not given.
     *
     * @param fallback null: the option is required
     * @throws IllegalArgumentException when it is missing and required, or not an integer
     */
    public long number(String name, Long fallback) {
        String v = values.get(name);
        if (v == null) {
            if (fallback == null) {
                throw new IllegalArgumentException("missing --" + name);
            }
            return fallback;
        }
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be an integer, not '" + v + "'");
        }
    }
}
