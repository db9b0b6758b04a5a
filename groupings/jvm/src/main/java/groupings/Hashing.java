package groupings;

import com.google.common.hash.HashFunction;
import java.nio.charset.StandardCharsets;

/**
 * Hashing of the reference groupings (docs/reference/dkg-reference.md §2), with the reference's
 * own library: Guava's {@code murmur3_128}, whose digest is the same in 16.0.1 (the reference's
 * build), 19.0 (declared) and 33.x.
 */
public final class Hashing {
    /** Murmur3 seed of KEY, of DYNAMIC_KEY's home worker and of PARTIAL_KEY's first choice (§2.1). */
    public static final int KEY_SEED = 13;
    /** Murmur3 seed of PARTIAL_KEY's second choice (§2.1). */
    public static final int SECOND_SEED = 17;

    private static final HashFunction MURMUR_13 = com.google.common.hash.Hashing.murmur3_128(KEY_SEED);
    private static final HashFunction MURMUR_17 = com.google.common.hash.Hashing.murmur3_128(SECOND_SEED);

    private Hashing() {}

    /**
     * {@code Hashing.murmur3_128(seed).hashBytes(key.getBytes(UTF-8)).asLong()} (§2.1, §2.2).
     * {@code getBytes(UTF_8)} writes {@code ?} for an unpaired surrogate, the decision of Q14.
     *
     * @return the first 64-bit word of the x64 128-bit digest, little-endian, signed.
     */
    public static long asLong(int seed, String key) {
        HashFunction f = seed == KEY_SEED ? MURMUR_13
                : seed == SECOND_SEED ? MURMUR_17 : com.google.common.hash.Hashing.murmur3_128(seed);
        return f.hashBytes(key.getBytes(StandardCharsets.UTF_8)).asLong();
    }

    /**
     * The reference's worker index of a 64-bit hash, {@code (int) (Math.abs(v) % n)} (§2.3): in
     * [0, n) except for {@code v == Long.MIN_VALUE}, where it is {@code -(2^63 mod n)}.
     */
    public static int indexOfLong(long v, int n) {
        return (int) (Math.abs(v) % n);
    }

    /**
     * Worker index of {@code key} under murmur3 {@code seed} for {@code n} workers (§2.3).
     *
     * @throws HashIndexException when the index is negative: the reference throws on that key (Q13).
     */
    public static int index(int seed, String key, int n) {
        int index = indexOfLong(asLong(seed, key), n);
        if (index < 0) {
            throw new HashIndexException("key '" + key + "' hashes to Long.MIN_VALUE: the reference's worker index is "
                    + index + " (negative) and it throws on this key");
        }
        return index;
    }

    /** A key hashed to {@code Long.MIN_VALUE}, so the reference's worker index is negative (§2.3, Q13). */
    public static final class HashIndexException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        HashIndexException(String message) {
            super(message);
        }
    }
}
