package groupings;

import java.util.List;

/**
 * The groupings of this port by name, as {@code groupings.create_grouping} names them: the four
 * reference groupings, SLB's two (D_CHOICES, W_CHOICES) and the two that own groups of keys.
 */
public final class Groupings {
    public static final List<String> NAMES =
            List.of("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY", "D_CHOICES", "W_CHOICES", "KEY_GROUP", "VNODE");

    private Groupings() {}

    /**
     * One instance of grouping {@code name} (reference defaults; D_CHOICES and W_CHOICES with SLB's
     * T = 10 and epsilon = 0.0001; KEY_GROUP with Flink's default max parallelism, VNODE with 256
     * vnodes) for {@code numWorkers} workers.
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
            case "D_CHOICES":
                return new DChoicesGrouping(numWorkers, startMs);
            case "W_CHOICES":
                return new WChoicesGrouping(numWorkers, startMs);
            case "KEY_GROUP":
                return new KeyGroupGrouping(numWorkers, startMs);
            case "VNODE":
                return new VNodeGrouping(numWorkers, startMs);
            default:
                throw new IllegalArgumentException("unknown grouping " + name + "; expected one of " + NAMES);
        }
    }
}
