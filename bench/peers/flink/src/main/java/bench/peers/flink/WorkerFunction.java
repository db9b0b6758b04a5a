package bench.peers.flink;

import bench.peers.contract.PeerOutputs.TraceRow;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The worker (uid {@value #UID}): per key, the harness's worker state (count, sum, first and last
 * Kafka timestamp) in a Flink {@link ValueState}, the only copy of it (the state backend's, which a
 * savepoint writes and a restore redistributes by key group). Per tuple it updates the state, adds a
 * trace row (unit = the key's key group, {@link KeyGroupRangeAssignment#assignToKeyGroup}; worker =
 * this subtask's index, which owns that key group by Flink's
 * {@link KeyGroupRangeAssignment#computeOperatorIndexForKeyGroup}) and emits the key's new state.
 */
public final class WorkerFunction extends KeyedProcessFunction<String, Records.Tuple, Records.StateRow> {
    private static final long serialVersionUID = 1L;
    /** The worker operator's uid: how a savepoint names its state. */
    public static final String UID = "worker";
    /** The worker operator's name: its job vertex's. */
    public static final String NAME = "worker";

    /** The key of a tuple. */
    public static final class TupleKey implements KeySelector<Records.Tuple, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getKey(Records.Tuple t) {
            return t.key;
        }
    }

    private transient ValueState<Records.KeyCounts> state;
    private transient int subtask;
    private transient int maxParallelism;
    private transient int generation;
    private transient boolean firstSeen;

    /** The state's descriptor: name and type, the same for the job and the State Processor API. */
    public static ValueStateDescriptor<Records.KeyCounts> descriptor() {
        return new ValueStateDescriptor<>("key-counts", Records.KeyCounts.class);
    }

    @Override
    public void open(OpenContext context) {
        state = getRuntimeContext().getState(descriptor());
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        maxParallelism = getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks();
        generation = Progress.GENERATION.get();
    }

    @Override
    public void processElement(Records.Tuple t, Context ctx, Collector<Records.StateRow> out) throws Exception {
        Records.KeyCounts s = state.value();
        if (s == null) {
            s = new Records.KeyCounts();
            s.firstTsMs = t.tsMs;
            s.lastTsMs = t.tsMs;
        }
        s.count += 1;
        s.sum += t.count;
        s.firstTsMs = Math.min(s.firstTsMs, t.tsMs);
        s.lastTsMs = Math.max(s.lastTsMs, t.tsMs);
        state.update(s);
        long now = System.currentTimeMillis();
        if (!firstSeen) {
            firstSeen = true;
            Progress.FIRST_TUPLE_MS.merge(generation, now, Math::min);
        }
        int unit = KeyGroupRangeAssignment.assignToKeyGroup(t.key, maxParallelism);
        Progress.processed(t.id, new TraceRow(t.key, unit, subtask, t.releaseMs < 0 ? null : t.releaseMs, now), t.tsMs);
        out.collect(Records.StateRow.of(t.key, subtask, unit, s));
    }
}
