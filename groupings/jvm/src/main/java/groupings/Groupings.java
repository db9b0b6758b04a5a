package groupings;

import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The groupings of this port by name, as {@code groupings.create_grouping} names them: the four
 * reference groupings, SLB's two (D_CHOICES, W_CHOICES) and the two that own groups of keys.
 */
public final class Groupings {
    public static final List<String> NAMES =
            List.of("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY", "D_CHOICES", "W_CHOICES", "KEY_GROUP", "VNODE");

    /**
     * The parameters each grouping of this port takes, with the names and meanings of the Python
     * groupings' keyword arguments (groupings/dynamic_key.py, key_group.py, vnode.py); all integers.
     * A grouping not listed takes none here (SLB's {@code t} and {@code epsilon} are fixed at the
     * reference's values in this port).
     */
    public static final Map<String, List<String>> PARAMETERS = Map.of(
            "DYNAMIC_KEY", List.of("distinct_key_count", "warm_up_ms", "check_interval_ms", "initial_pool_size",
                    "maintenance_period_ms", "old_promotion_every"),
            "KEY_GROUP", List.of("max_parallelism"),
            "VNODE", List.of("vnodes"));

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
