package bench.peers.storm.topology;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The target lists a custom stream grouping returns, built once in {@code prepare}. */
final class Targets {
    private Targets() {
    }

    /**
     * One immutable single-task list per target task, in ascending task id (index i = the i-th
     * task of the component), so that {@code chooseTasks} allocates nothing per tuple.
     */
    static List<List<Integer>> singletons(List<Integer> targetTasks) {
        List<Integer> sorted = new ArrayList<>(targetTasks);
        Collections.sort(sorted);
        List<List<Integer>> targets = new ArrayList<>(sorted.size());
        for (Integer task : sorted) {
            targets.add(Collections.singletonList(task));
        }
        return targets;
    }
}
