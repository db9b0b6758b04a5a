package groupings;

import java.util.List;

/** The four reference groupings by name, as {@code groupings.create_grouping} names them. */
public final class Groupings {
    public static final List<String> NAMES = List.of("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY");

    private Groupings() {}

    /**
     * One instance of grouping {@code name} (reference defaults) for {@code numWorkers} workers.
     *
     * @param startMs when the instance was prepared: DYNAMIC_KEY's warm-up and cycle-0 anchor
     * @throws IllegalArgumentException for an unknown name
     */
    public static ReferenceGrouping create(String name, int numWorkers, long startMs) {
        switch (name) {
            case "SHUFFLE":
                return new ShuffleGrouping(numWorkers, startMs);
            case "KEY":
                return new KeyGrouping(numWorkers, startMs);
            case "PARTIAL_KEY":
                return new PartialKeyGrouping(numWorkers, startMs);
            case "DYNAMIC_KEY":
                return new DynamicKeyGrouping(numWorkers, startMs);
            default:
                throw new IllegalArgumentException("unknown grouping " + name + "; expected one of " + NAMES);
        }
    }
}
