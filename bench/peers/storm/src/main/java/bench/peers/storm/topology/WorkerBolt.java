package bench.peers.storm.topology;

import java.util.HashMap;
import java.util.Map;
import groupings.PacedCost;
import org.HdrHistogram.Histogram;
import org.apache.storm.Config;
import org.apache.storm.Constants;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * Storm's WorkerBolt (reference §9): per tuple, the simulated cost, then {@code key -> sum} in a
 * tumbling window that a tick tuple closes every {@code windowSeconds} (reference: 15 s), emitting
 * one {@code (worker, key, sum)} per key to the aggregator.
 *
 * <p>Cost: the reference's speed rule paced as the harness's worker task pays it ({@link PacedCost},
 * the same class: a sleep's overshoot is taken off the next); {@code costMs = 0} sleeps never. The
 * worker index is the task's index among the worker bolt's tasks (sorted task ids), the index the
 * grouping chose.
 *
 * <p>Latency, as the harness's worker task ({@code bench/topology/jvm} {@code WorkerTask}): once a
 * tuple's cost is paid, its processing latency (now minus the record's Kafka timestamp, µs, clipped
 * to [1 µs, 24 h]) goes into this task's HdrHistogram (3 significant digits), registered with
 * {@link PeerProgress#latencies} and merged by the peer at the end. Tuples within the warm-up count
 * ({@link PeerProgress#tupleProcessed} returns false) are not recorded, as the throughput leaves them
 * out. On a topic recorded before the run the figure is the records' age, not a latency; on a
 * topic a producer paces while the peer reads it, it is the harness's LAT.
 */
public final class WorkerBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;

    private final double costMs;
    private final int every;
    private final int windowSeconds;
    private transient OutputCollector collector;
    private transient int index;
    private transient PacedCost cost;
    private transient HashMap<String, long[]> window;
    private transient Histogram latency;

    public WorkerBolt(double costMs, int every, int windowSeconds) {
        this.costMs = costMs;
        this.every = Math.max(1, every);
        this.windowSeconds = windowSeconds;
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        this.index = context.getThisTaskIndex();
        this.cost = new PacedCost(costMs, every);
        this.window = new HashMap<>();
        this.latency = PeerProgress.newLatencyHistogram();
    }

    @Override
    public void execute(Tuple input) {
        if (Constants.SYSTEM_COMPONENT_ID.equals(input.getSourceComponent())
                && Constants.SYSTEM_TICK_STREAM_ID.equals(input.getSourceStreamId())) {
            closeWindow();
            return;
        }
        cost.pay();
        String key = input.getString(0);
        long count = input.getLong(1);
        window.computeIfAbsent(key, k -> new long[1])[0] += count;
        if (PeerProgress.tupleProcessed(index)) {
            PeerProgress.record(latency, PeerProgress.nowUs() - 1_000 * input.getLong(2));
        }
    }

    private void closeWindow() {
        for (Map.Entry<String, long[]> e : window.entrySet()) {
            collector.emit(new Values(index, e.getKey(), e.getValue()[0]));
        }
        PeerProgress.WINDOW_EMITS.add(window.size());
        window.clear();
    }

    @Override
    public Map<String, Object> getComponentConfiguration() {
        Map<String, Object> conf = new HashMap<>();
        conf.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, windowSeconds);
        return conf;
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("worker", "key", "sum"));
    }
}
