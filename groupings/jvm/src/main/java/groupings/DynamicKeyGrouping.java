package groupings;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * DYNAMIC_KEY (reference {@code DynamicKeyGrouping}, §6-§8): each key has a pool of candidate
 * workers, the ring slice {@code home, home+1, ..., home+w-1 (mod n)} with {@code home =
 * index(13, key, n)} and {@code w = 2} by default; a tuple goes to the least loaded member (local,
 * cumulative, floored integer percentages). At most once per {@code checkIntervalMs} per key, a
 * check grows the pool of an old-space key whose whole pool is at or above {@code up} by the next
 * ring neighbour if that one is strictly less loaded, or shrinks a pool with two members below
 * {@code up} (Q1). Quirks Q1-Q12 are reproduced.
 *
 * <p>The KeySpace cycles run lazily on the injected clock (§8): before a tuple, every cycle k due at
 * {@code startMs + 15000 k <= now} that has not run yet; cycle k also promotes teen→old when
 * {@code k mod 4 == 3}. The reference ran them on a thread with the wall clock.
 */
public final class DynamicKeyGrouping extends ReferenceGrouping {
    private static final int INT_MAX = Integer.MAX_VALUE; // the reference's initial minimum load

    private final long warmUpMs;
    private final long checkIntervalMs;
    private final int initialPoolSize;
    private final long maintenancePeriodMs;
    private final int oldPromotionEvery;
    /** Scale thresholds in integer percent (§6.2); {@code down} is computed and never used (Q1). */
    public final int up;
    public final int down;
    private final KeySpace keySpace;
    private final HashMap<String, Integer> pool = new HashMap<>();
    private long total;
    private long nextCycle;

    /** The reference defaults of the parameters, in the order of the full constructor. */
    public static final int DEFAULT_DISTINCT_KEY_COUNT = 100;
    public static final long DEFAULT_WARM_UP_MS = 15000;
    public static final long DEFAULT_CHECK_INTERVAL_MS = 60000;
    public static final int DEFAULT_INITIAL_POOL_SIZE = 2;
    public static final long DEFAULT_MAINTENANCE_PERIOD_MS = 15000;
    public static final int DEFAULT_OLD_PROMOTION_EVERY = 4;

    /** With the reference defaults: distinct_key_count 100, warm-up 15 s, check 60 s, pool 2, cycle 15 s, old every 4. */
    public DynamicKeyGrouping(int numWorkers, long startMs) {
        this(numWorkers, startMs, DEFAULT_DISTINCT_KEY_COUNT, DEFAULT_WARM_UP_MS, DEFAULT_CHECK_INTERVAL_MS,
                DEFAULT_INITIAL_POOL_SIZE, DEFAULT_MAINTENANCE_PERIOD_MS, DEFAULT_OLD_PROMOTION_EVERY);
    }

    public DynamicKeyGrouping(int numWorkers, long startMs, int distinctKeyCount, long warmUpMs, long checkIntervalMs,
                              int initialPoolSize, long maintenancePeriodMs, int oldPromotionEvery) {
        super(numWorkers, startMs);
        if (initialPoolSize < 1 || maintenancePeriodMs < 1 || oldPromotionEvery < 1) {
            throw new IllegalArgumentException("initial_pool_size, maintenance_period_ms and old_promotion_every must be >= 1");
        }
        this.warmUpMs = warmUpMs;
        this.checkIntervalMs = checkIntervalMs;
        this.initialPoolSize = initialPoolSize;
        this.maintenancePeriodMs = maintenancePeriodMs;
        this.oldPromotionEvery = oldPromotionEvery;
        int[] thresholds = scaleThresholds(numWorkers);
        this.up = thresholds[0];
        this.down = thresholds[1];
        this.keySpace = new KeySpace(distinctKeyCount);
    }

    /**
     * DKG's thresholds {@code {up, down}} for n workers (§6.2): with {@code ideal = 100.0 / n},
     * {@code up = (int) (ideal + sqrt(ideal))}, {@code down = (int) (ideal - sqrt(ideal))}; n = 5
     * gives {24, 15}, n = 10 {13, 6}.
     */
    public static int[] scaleThresholds(int n) {
        double ideal = 100.0 / n;
        return new int[] {(int) (ideal + Math.sqrt(ideal)), (int) (ideal - Math.sqrt(ideal))};
    }

    @Override
    protected int route(String key, long now) {
        int home = Hashing.index(Hashing.KEY_SEED, key, numWorkers); // throws before any state changes
        runDueMaintenance(now);
        int task = best(key, home, now);
        sent[task]++;
        total++;
        keySpace.record(key); // after routing: a key's first tuple finds no item
        return task;
    }

    /** §6.4 {@code best(key, now)}: the least-loaded pool member, then at most one scaling check. */
    private int best(String key, int home, long now) {
        int n = numWorkers;
        int w = pool.getOrDefault(key, initialPoolSize);
        int below = 0;
        int best = -1;
        int minLoad = INT_MAX;
        for (int i = 0; i < w; i++) {
            int c = (home + i) % n;
            int load = load(c);
            if (load < up) {
                below++;
            }
            if (load < minLoad) { // strict: ties go to the earliest ring position (home first)
                minLoad = load;
                best = c;
            }
        }
        KeySpace.KeyItem item = keySpace.find(key);
        if (item != null && checkDue(item, now)) {
            if (now - startMs > warmUpMs && minLoad >= up && keySpace.inOld(key)) {
                int candidate = (home + w) % n; // only the next ring neighbour (Q3)
                if (load(candidate) < minLoad) {
                    best = candidate; // the new worker takes this very tuple
                    pool.put(key, w + 1);
                }
            } else if (w > initialPoolSize && below >= 2) { // counted against `up`, not `down` (Q1)
                if (w - 1 <= initialPoolSize) {
                    pool.remove(key);
                } else {
                    pool.put(key, w - 1);
                }
                return best(key, home, now); // re-route with the smaller pool
            }
        }
        return best;
    }

    /** {@code (100 * sent[t]) // total}, 0 before the first tuple (§6.3). */
    private int load(int worker) {
        return total == 0 ? 0 : (int) ((100 * sent[worker]) / total);
    }

    /** §6.5: due when never checked or {@code now - lastCheck > checkIntervalMs}; a due check stamps it. */
    private boolean checkDue(KeySpace.KeyItem item, long now) {
        if (item.lastCheck != KeySpace.NEVER && !(now - item.lastCheck > checkIntervalMs)) {
            return false;
        }
        item.lastCheck = now;
        return true;
    }

    private void runDueMaintenance(long now) {
        while (startMs + nextCycle * maintenancePeriodMs <= now) {
            keySpace.promoteToTeenageSpace();
            if (nextCycle % oldPromotionEvery == oldPromotionEvery - 1) {
                keySpace.promoteToOldSpace();
            }
            nextCycle++;
        }
    }

    /** The key's pool size at this instance ({@code initialPoolSize} without an entry). */
    public int poolSize(String key) {
        return pool.getOrDefault(key, initialPoolSize);
    }

    /** The pool map (keys with an entry), sorted by key. */
    public Map<String, Integer> poolSizes() {
        return new TreeMap<>(pool);
    }

    public KeySpace keySpace() {
        return keySpace;
    }

    @Override
    public String name() {
        return "DYNAMIC_KEY";
    }
}
