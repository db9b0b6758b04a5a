package bench.peers.flink;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.flink.util.CloseableIterator;

/**
 * Reads the workers' keyed state back from a savepoint with Flink's State Processor API
 * ({@code SavepointReader.read(env, path, new HashMapStateBackend()).readKeyedState(forUid("worker"), ...)}),
 * as a batch job of its own on the given environment (the peer: {@link ClusterJobs#environment()},
 * its own MiniCluster).
 */
public final class FinalStateReader {
    private FinalStateReader() {}

    /**
     * Every key's state in the savepoint at {@code savepointPath}, sorted by key; worker = the operator
     * index of the key's group at {@code workers} (the parallelism the state was last owned at).
     */
    public static List<Records.StateRow> read(StreamExecutionEnvironment env, String savepointPath, int workers,
                                              int maxParallelism) throws Exception {
        SavepointReader savepoint = SavepointReader.read(env, savepointPath, new HashMapStateBackend());
        List<Records.StateRow> rows = new ArrayList<>();
        try (CloseableIterator<Records.StateRow> it = savepoint.readKeyedState(
                OperatorIdentifier.forUid(WorkerFunction.UID), new Reader(workers, maxParallelism))
                .executeAndCollect("flink-rescale-peer: read the final state")) {
            it.forEachRemaining(rows::add);
        }
        rows.sort(Comparator.comparing(r -> r.key));
        return rows;
    }

    /** One key's {@link WorkerFunction#descriptor()} value as a row. */
    static final class Reader extends KeyedStateReaderFunction<String, Records.StateRow> {
        private static final long serialVersionUID = 1L;
        private final int workers;
        private final int maxParallelism;
        private transient ValueState<Records.KeyCounts> state;

        Reader(int workers, int maxParallelism) {
            this.workers = workers;
            this.maxParallelism = maxParallelism;
        }

        @Override
        public void open(OpenContext context) {
            state = getRuntimeContext().getState(WorkerFunction.descriptor());
        }

        @Override
        public void readKey(String key, Context ctx, Collector<Records.StateRow> out) throws Exception {
            int unit = KeyGroups.unit(key, maxParallelism);
            out.collect(Records.StateRow.of(key, KeyGroups.owner(unit, maxParallelism, workers), unit, state.value()));
        }
    }
}
