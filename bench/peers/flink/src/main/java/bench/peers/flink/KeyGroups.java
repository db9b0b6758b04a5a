package bench.peers.flink;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * Flink's routing of keyed state (the harness's KEY_GROUP, docs/rescaling.md section 1), by Flink's
 * own {@link KeyGroupRangeAssignment}: key -> key group = murmur(String.hashCode) mod max
 * parallelism; key group -> operator index = kg * parallelism / max parallelism (contiguous ranges).
 */
public final class KeyGroups {
    private KeyGroups() {}

    /** The key group (the peer's unit) of {@code key}, in [0, maxParallelism). */
    public static int unit(String key, int maxParallelism) {
        return KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism);
    }

    /** The operator index (worker) owning {@code keyGroup} at {@code parallelism}. */
    public static int owner(int keyGroup, int maxParallelism, int parallelism) {
        return KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup);
    }

    /** The key groups whose owner differs between parallelism {@code from} and {@code to}, ascending. */
    public static List<Integer> moved(int maxParallelism, int from, int to) {
        List<Integer> moved = new ArrayList<>();
        for (int kg = 0; kg < maxParallelism; kg++) {
            if (owner(kg, maxParallelism, from) != owner(kg, maxParallelism, to)) {
                moved.add(kg);
            }
        }
        return moved;
    }

    /** How many of {@code keys} are in a key group that changes owner between {@code from} and {@code to}. */
    public static long keysMoved(Collection<String> keys, int maxParallelism, int from, int to) {
        return keys.stream().map(k -> unit(k, maxParallelism))
                .filter(kg -> owner(kg, maxParallelism, from) != owner(kg, maxParallelism, to)).count();
    }
}
