package groupings;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * The golden stream and protocol of docs/reference/dkg-reference.md §14: SplitMix64 keys
 * ({@code Turkey} with probability skew %, else {@code K000..K199}), R tuples per virtual second
 * from T0 = 1,000,000 ms, S instances with tuple i going to instance i mod S.
 */
final class GoldenStream {
    static final long T0 = 1_000_000L;
    static final int RATE = 200;
    static final int COUNT = 60_000;
    static final int SKEW = 80;

    private GoldenStream() {}

    /** SplitMix64 finaliser (§14), all arithmetic mod 2^64. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long draw(long j) {
        return mix((j + 1) * 0x9E3779B97F4A7C15L);
    }

    static String key(long i, int skew) {
        if (Long.remainderUnsigned(draw(2 * i), 100) < skew) {
            return "Turkey";
        }
        return String.format("K%03d", Long.remainderUnsigned(draw(2 * i + 1), 200));
    }

    static long nowMs(long i, int rate) {
        long s = i / rate;
        long k = i % rate;
        return T0 + 1000 * s + (1000 * k) / rate;
    }

    /** The routing of the golden protocol: tasks[i] for tuple i, and the S instances afterwards. */
    static final class Routed {
        final String[] keys;
        final int[] tasks;
        final List<ReferenceGrouping> instances;

        Routed(String[] keys, int[] tasks, List<ReferenceGrouping> instances) {
            this.keys = keys;
            this.tasks = tasks;
            this.instances = instances;
        }

        long[] perTaskCounts(int n) {
            long[] counts = new long[n];
            for (int t : tasks) {
                counts[t]++;
            }
            return counts;
        }

        /** "%d %d %s %d\n" per tuple (§14). */
        String trace(int sources) {
            StringBuilder out = new StringBuilder(tasks.length * 16);
            for (int i = 0; i < tasks.length; i++) {
                out.append(i).append(' ').append(i % sources).append(' ').append(keys[i]).append(' ')
                        .append(tasks[i]).append('\n');
            }
            return out.toString();
        }
    }

    static Routed run(String grouping, int n, int sources, int count) {
        return run((w, start) -> Groupings.create(grouping, w, start), n, sources, count, null);
    }

    /**
     * @param afterInstance0 called after each tuple of instance 0 with (i, instance 0), or null
     */
    static Routed run(BiFunction<Integer, Long, ReferenceGrouping> factory, int n, int sources, int count,
                      java.util.function.ObjLongConsumer<ReferenceGrouping> afterInstance0) {
        List<ReferenceGrouping> instances = new ArrayList<>();
        for (int s = 0; s < sources; s++) {
            instances.add(factory.apply(n, T0));
        }
        String[] keys = new String[count];
        int[] tasks = new int[count];
        for (int i = 0; i < count; i++) {
            keys[i] = key(i, SKEW);
            long now = nowMs(i, RATE);
            tasks[i] = instances.get(i % sources).choose(keys[i], now);
            if (afterInstance0 != null && i % sources == 0) {
                afterInstance0.accept(instances.get(0), now);
            }
        }
        return new Routed(keys, tasks, instances);
    }

    /** tests/groupings/golden, from the system property set by the pom. */
    static Path goldenDir() {
        Path dir = Paths.get(System.getProperty("golden.dir", "../../tests/groupings/golden"));
        if (!Files.isDirectory(dir)) {
            throw new IllegalStateException("reference folder not found: " + dir.toAbsolutePath().normalize()
                    + " (tests/groupings/golden of the repository)");
        }
        return dir;
    }
}
