package bench.peers.storm.topology;

import java.util.HashMap;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;

/**
 * Storm's AggregatorBolt (reference §9, parallelism 1 here as in the harness): merges the worker
 * bolts' window partials into {@code key -> total}. Like the reference it emits nothing (a log-only
 * sink); the peer reads the sum of its totals to check that every tuple reached it.
 */
public final class AggregatorBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;

    private transient HashMap<String, long[]> totals;

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        totals = new HashMap<>();
    }

    @Override
    public void execute(Tuple input) {
        long sum = input.getLong(2);
        totals.computeIfAbsent(input.getString(1), k -> new long[1])[0] += sum;
        PeerProgress.AGGREGATED.add(sum);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {}
}
