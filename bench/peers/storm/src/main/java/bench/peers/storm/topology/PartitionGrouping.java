package bench.peers.storm.topology;

import java.util.List;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.task.WorkerTopologyContext;

/**
 * Spout → splitter: a record of Kafka partition p goes to splitter task index {@code p mod S}, as
 * in the harness (splitter instance s = partition mod S). Each splitter then sees its partitions
 * in offset order, so its grouping instance routes exactly the tuples, in exactly the order, that
 * the harness's instance s and {@code bench simulate --topic} route. The reference used a shuffle
 * grouping here, which makes per-instance routing depend on thread timing.
 */
public final class PartitionGrouping implements CustomStreamGrouping {
    private static final long serialVersionUID = 1L;
    /** Field index of the Kafka partition in the spout's tuples. */
    static final int PARTITION = 0;

    private transient List<List<Integer>> targets;

    @Override
    public void prepare(WorkerTopologyContext context, GlobalStreamId stream, List<Integer> targetTasks) {
        targets = Targets.singletons(targetTasks);
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        int partition = (Integer) values.get(PARTITION);
        return targets.get(partition % targets.size());
    }
}
