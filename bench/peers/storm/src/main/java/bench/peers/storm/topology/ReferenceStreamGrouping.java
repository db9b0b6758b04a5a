package bench.peers.storm.topology;

import groupings.Groupings;
import groupings.ReferenceGrouping;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.task.WorkerTopologyContext;

/**
 * Splitter → worker bolts: one of the reference groupings as a Storm {@link CustomStreamGrouping}.
 * Each splitter task owns one grouping instance (Q18), kept here by the source task id that
 * {@link #chooseTasks} is given: Storm 2.8 deserialises one copy of a custom grouping per sending
 * executor, shared by the executor's tasks (with 10 splitter tasks on 2 executors, one instance per
 * copy routed DYNAMIC_KEY's tuples differently from the simulator's ten; 2026-11-28). An executor
 * is one thread, so the map needs no lock. Worker index i is the i-th smallest target task id (the
 * reference's convention, §Conventions).
 *
 * <p>Clock: the tuple's Kafka timestamp (field 2, ms), like the harness's grouping stage; the
 * instance is created on its first tuple with {@code start_ms} = that timestamp, as the harness and
 * {@code bench simulate} do. The reference read the wall clock.
 */
public final class ReferenceStreamGrouping implements CustomStreamGrouping {
    private static final long serialVersionUID = 1L;
    /** Fields of the splitter's output stream: key (String), count (Long), ts (Long, Kafka timestamp ms). */
    static final int KEY = 0;
    static final int TS = 2;

    private final String grouping;
    private transient List<List<Integer>> targets;
    private transient Map<Integer, ReferenceGrouping> instances;

    public ReferenceStreamGrouping(String grouping) {
        Groupings.create(grouping, 1, 0); // refuse an unknown name when the topology is built
        this.grouping = grouping;
    }

    @Override
    public void prepare(WorkerTopologyContext context, GlobalStreamId stream, List<Integer> targetTasks) {
        targets = Targets.singletons(targetTasks);
        instances = new HashMap<>();
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        String key = (String) values.get(KEY);
        long now = (Long) values.get(TS);
        ReferenceGrouping instance =
                instances.computeIfAbsent(taskId, t -> Groupings.create(grouping, targets.size(), now));
        return targets.get(instance.choose(key, now));
    }
}
