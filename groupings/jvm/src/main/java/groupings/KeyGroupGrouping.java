package groupings;

import com.google.common.hash.HashFunction;

/**
 * KEY_GROUP: Apache Flink's key groups ({@code KeyGroupRangeAssignment}), also Volley's two-level
 * hashing, as {@code groupings/key_group.py}: key group {@code murmurHash(key.hashCode()) % M}, worker
 * i owns the contiguous range {@code kg * n / M == i}. Bit-exact with Flink 1.20 for String keys
 * (docs/reference/rescaling.md §1, whose vectors, computed with Flink's own jar, are the tests).
 */
public final class KeyGroupGrouping extends OwnershipGrouping {
    private static final long serialVersionUID = 1L;
    /** Flink's {@code DEFAULT_LOWER_BOUND_MAX_PARALLELISM}. */
    public static final int LOWER_BOUND_MAX_PARALLELISM = 128;
    /** Flink's {@code UPPER_BOUND_MAX_PARALLELISM}, 32768. */
    public static final int UPPER_BOUND_MAX_PARALLELISM = 1 << 15;
    /** Murmur3 x86 32-bit, seed 0: Flink's {@code MathUtils.murmurHash} on an int is its one round and finaliser. */
    private static final HashFunction MURMUR3_32 = com.google.common.hash.Hashing.murmur3_32_fixed();

    /** With Flink's default max parallelism for {@code numWorkers} ({@link #defaultMaxParallelism}). */
    public KeyGroupGrouping(int numWorkers, long startMs) {
        this(numWorkers, startMs, defaultMaxParallelism(numWorkers));
    }

    /** @throws IllegalArgumentException {@code maxParallelism} outside [numWorkers, 32768] */
    public KeyGroupGrouping(int numWorkers, long startMs, int maxParallelism) {
        super(numWorkers, startMs, maxParallelism, "max_parallelism", UPPER_BOUND_MAX_PARALLELISM);
    }

    /**
     * Flink {@code MathUtils.murmurHash(int)}: the Murmur3 hash {@code c} of the int, {@code c} if
     * {@code c >= 0}, {@code -c} if negative, 0 for {@code Integer.MIN_VALUE}; in [0, 2^31).
     */
    public static int murmurHash(int code) {
        int c = MURMUR3_32.hashInt(code).asInt();
        return c >= 0 ? c : c != Integer.MIN_VALUE ? -c : 0;
    }

    /** Flink {@code assignToKeyGroup} for a String key: {@code murmurHash(key.hashCode()) % maxParallelism}. */
    public static int assignToKeyGroup(String key, int maxParallelism) {
        return murmurHash(key.hashCode()) % maxParallelism;
    }

    /**
     * Flink {@code computeDefaultMaxParallelism}: {@code min(max(roundUpToPowerOfTwo(n + n / 2), 128),
     * 32768)}; 128 for n <= 85.
     */
    public static int defaultMaxParallelism(int numWorkers) {
        int target = numWorkers + numWorkers / 2;
        int power = 1;
        while (power < target && power < UPPER_BOUND_MAX_PARALLELISM) {
            power <<= 1;
        }
        return Math.min(Math.max(power, LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM);
    }

    @Override
    public int groupOf(String key) {
        return assignToKeyGroup(key, groups);
    }

    @Override
    public String name() {
        return "KEY_GROUP";
    }
}
