package bench.peers.storm.topology;

import bench.peers.contract.PeerOutputs;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.Func;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

/**
 * The Storm peer: the reference topology on Apache Storm (LocalCluster, one worker process, this
 * JVM) over a recorded Kafka topic, read once from its start, as fast as it goes.
 *
 * <pre>
 * KafkaSpout xP --partition p -> splitter p mod S--> SplitterBolt xS --reference grouping--> WorkerBolt xW
 *   --fields(key)--> AggregatorBolt x1
 * </pre>
 *
 * Acking is off (0 ackers, spout NO_GUARANTEE), as in the reference experiments. It prints
 * per-worker loads and, last, its result line ({@link PeerOutputs#printResult}) that
 * bench/peers/storm.py reads. Exit status 0 only when every record of the topic was read and
 * every tuple processed and aggregated; 2 otherwise.
 *
 * <p>Options (all {@code --name value}): bootstrap, topic, records (the topic's record count),
 * grouping, spouts (10), splitters (10), workers (10): tasks of each component (the routing's
 * instances and targets); spout-executors, splitter-executors, worker-executors: the threads that
 * run them (default: one per task; Storm's performance guide fits busy executors to the cores,
 * which changes no routing: a task keeps its index), cost-ms (0), cost-every (1),
 * window-s (15), warm-up-fraction (0.1), max-poll-records (500, Kafka's default),
 * poll-timeout-ms (200, the spout's default), fetch-max-wait-ms (10, as the harness's spout),
 * producer-batch-size (1), transfer-batch-size (1), flush-interval-ms (1) (Storm's defaults),
 * idle-timeout-s (60).
 *
 * <p>The result's {@code latency}: the worker bolts' per-tuple processing latency after the
 * warm-up share (see {@link WorkerBolt}), as HdrHistogram's compressed base64 form (the harness's
 * worker task encodes its histograms the same way) with its count. {@code progress}: samples
 * {@code [epoch ms, records read, tuples processed]} every {@value #SAMPLE_MS} ms from the
 * submission to the end of the input (a capacity step's lag series); {@code cpu_seconds}: this
 * JVM's CPU time over the same span (every executor, Storm's own threads and the JIT).
 */
public final class StormPeer {
    static final long SAMPLE_MS = 250;

    private StormPeer() {}

    /** Kafka record -> (partition, offset, ts, value bytes). A named class: the spout config is serialised. */
    static final class Translate implements Func<ConsumerRecord<byte[], byte[]>, List<Object>> {
        private static final long serialVersionUID = 1L;

        @Override
        public List<Object> apply(ConsumerRecord<byte[], byte[]> r) {
            List<Object> values = new ArrayList<>(4);
            values.add(r.partition());
            values.add(r.offset());
            values.add(r.timestamp());
            values.add(r.value());
            return values;
        }
    }

    public static void main(String[] argv) throws Exception {
        StormPeerOptions o = StormPeerOptions.parse(argv);
        PeerProgress.reset(o.workers, o.records, o.warmUpTuples());
        Map<String, Object> result;
        long startNanos = System.nanoTime();
        try (LocalCluster cluster = new LocalCluster()) {
            result = run(cluster, o, startNanos);
            KillOptions now = new KillOptions();
            now.set_wait_secs(0); // nothing left to drain: every tuple is counted
            cluster.killTopologyWithOpts("storm-peer", now);
        }
        printHuman(result);
        PeerOutputs.printResult(result);
        // LocalCluster leaves non-daemon threads (ZooKeeper, timers) behind: leave the JVM now.
        Runtime.getRuntime().halt(Boolean.TRUE.equals(result.get("ok")) ? 0 : 2);
    }

    /** The reference topology: KafkaSpout -> SplitterBolt -> WorkerBolt -> AggregatorBolt. */
    static TopologyBuilder topology(StormPeerOptions o) {
        KafkaSpoutConfig<byte[], byte[]> spoutConfig = new KafkaSpoutConfig.Builder<byte[], byte[]>(o.bootstrap, o.topic)
                .setProp(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
                .setProp(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
                .setProp(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, o.maxPollRecords)
                .setProp(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, o.fetchMaxWaitMs)
                .setGroupId("storm-peer-" + o.topic + "-" + System.currentTimeMillis())
                .setFirstPollOffsetStrategy(FirstPollOffsetStrategy.EARLIEST)
                .setProcessingGuarantee(KafkaSpoutConfig.ProcessingGuarantee.NO_GUARANTEE)
                .setTupleTrackingEnforced(false)
                .setPollTimeoutMs(o.pollTimeoutMs)
                .setRecordTranslator(new Translate(), new Fields("partition", "offset", "ts", "value"))
                .build();
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new KafkaSpout<>(spoutConfig), o.spoutExecutors).setNumTasks(o.spouts);
        builder.setBolt("splitter", new SplitterBolt("country"), o.splitterExecutors).setNumTasks(o.splitters)
                .customGrouping("spout", new PartitionGrouping());
        builder.setBolt("worker", new WorkerBolt(o.costMs, o.costEvery, o.windowS), o.workerExecutors)
                .setNumTasks(o.workers).customGrouping("splitter", new ReferenceStreamGrouping(o.grouping));
        builder.setBolt("aggregator", new AggregatorBolt(), 1).fieldsGrouping("worker", new Fields("key"));
        return builder;
    }

    /** One worker process, no ackers, Storm's batching settings from the options. */
    static Config config(StormPeerOptions o) {
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(0);
        conf.put(Config.TOPOLOGY_PRODUCER_BATCH_SIZE, o.producerBatch);
        conf.put(Config.TOPOLOGY_TRANSFER_BATCH_SIZE, o.transferBatch);
        conf.put(Config.TOPOLOGY_BATCH_FLUSH_INTERVAL_MILLIS, o.flushMs);
        return conf;
    }

    /** Submit the topology to {@code cluster}, wait for the whole input, and return the result (its
     * {@code ok} true only when every record was read and every tuple processed and aggregated). */
    private static Map<String, Object> run(LocalCluster cluster, StormPeerOptions o, long startNanos)
            throws Exception {
        long submitNanos = System.nanoTime();
        long cpuStart = processCpuNanos();
        cluster.submitTopology("storm-peer", config(o), topology(o).createTopology());
        List<long[]> progress = new ArrayList<>();
        String outcome = waitForInput(o.records, o.idleTimeoutNs, progress);
        double cpuSeconds = (processCpuNanos() - cpuStart) / 1e9;
        long processed = PeerProgress.PROCESSED.get();
        long emitted = PeerProgress.TUPLES_EMITTED.sum();
        // The last windows close on the next tick: wait for the aggregator to hold every tuple.
        long aggDeadline = System.nanoTime() + (2L * o.windowS + 10) * 1_000_000_000L;
        while (PeerProgress.AGGREGATED.sum() < processed && System.nanoTime() < aggDeadline) {
            Thread.sleep(100);
        }
        long aggregated = PeerProgress.AGGREGATED.sum();
        long malformed = PeerProgress.MALFORMED.sum();
        long read = PeerProgress.RECORDS.sum();
        boolean ok = outcome.equals("complete") && read == o.records && processed == emitted
                && emitted == o.records - malformed && aggregated == processed;

        long warmUp = o.warmUpTuples();
        long warm = PeerProgress.warmNanos;
        long last = PeerProgress.lastNanos;
        long first = PeerProgress.firstNanos;
        double steady = ok && last > warm && warm > 0 ? (o.records - warmUp) / ((last - warm) / 1e9) : Double.NaN;
        long[] loads = new long[o.workers];
        for (int i = 0; i < o.workers; i++) {
            loads[i] = PeerProgress.workerLoads.get(i);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("ok", ok);
        result.put("outcome", outcome);
        result.put("grouping", o.grouping);
        result.put("topic", o.topic);
        result.put("records_expected", o.records);
        result.put("records_read", read);
        result.put("malformed", malformed);
        result.put("tuples_emitted", emitted);
        result.put("tuples_processed", processed);
        result.put("tuples_aggregated", aggregated);
        result.put("worker_loads", loads);
        result.put("latency", latency(PeerProgress.latency()));
        result.put("progress", progress);
        result.put("cpu_seconds", cpuSeconds);
        result.put("steady_rate", Double.isNaN(steady) ? null : steady);
        result.put("warm_up_tuples", warmUp);
        result.put("steady_seconds", ok ? (last - warm) / 1e9 : null);
        result.put("first_to_last_seconds", ok ? (last - first) / 1e9 : null);
        result.put("submit_to_first_tuple_seconds", first > 0 ? (first - submitNanos) / 1e9 : null);
        result.put("cluster_start_seconds", (submitNanos - startNanos) / 1e9);
        result.put("settings", o.settings());
        return result;
    }

    /**
     * Wait until the splitters read every record and the worker bolts processed every emitted tuple,
     * adding a {@code [epoch ms, read, processed]} sample to {@code progress} every {@link #SAMPLE_MS}.
     */
    private static String waitForInput(long records, long idleTimeoutNs, List<long[]> progress)
            throws InterruptedException {
        long lastChange = System.nanoTime();
        long seen = -1;
        long nextSample = 0;
        while (true) {
            long read = PeerProgress.RECORDS.sum();
            long processed = PeerProgress.PROCESSED.get();
            long nowMs = System.currentTimeMillis();
            if (nowMs >= nextSample) {
                progress.add(new long[] {nowMs, read, processed});
                nextSample = nowMs + SAMPLE_MS;
            }
            if (read >= records && processed >= PeerProgress.TUPLES_EMITTED.sum()) {
                progress.add(new long[] {System.currentTimeMillis(), read, processed});
                Thread.sleep(200); // anything beyond the expected records would show now
                return PeerProgress.RECORDS.sum() == records ? "complete" : "more records than expected";
            }
            if (read + processed != seen) {
                seen = read + processed;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > idleTimeoutNs) {
                return "no progress for " + idleTimeoutNs / 1_000_000_000L + " s";
            }
            Thread.sleep(20);
        }
    }

    /** This JVM's CPU time so far, ns (every thread). */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** {@code {"tuples": n, "histogram": <compressed base64>}} of the merged worker latencies. */
    private static Map<String, Object> latency(Histogram histogram) {
        ByteBuffer buffer = ByteBuffer.allocate(histogram.getNeededByteBufferCapacity());
        int length = histogram.encodeIntoCompressedByteBuffer(buffer);
        byte[] bytes = new byte[length];
        buffer.rewind();
        buffer.get(bytes);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tuples", histogram.getTotalCount());
        out.put("histogram", Base64.getEncoder().encodeToString(bytes));
        return out;
    }

    private static void printHuman(Map<String, Object> r) {
        System.out.printf("storm peer %s on %s: %s, %d of %d records read (%d malformed), %d tuples processed, %d aggregated%n",
                r.get("grouping"), r.get("topic"), r.get("outcome"), r.get("records_read"), r.get("records_expected"),
                r.get("malformed"), r.get("tuples_processed"), r.get("tuples_aggregated"));
        long[] loads = (long[]) r.get("worker_loads");
        StringBuilder line = new StringBuilder("worker loads (tuples, by worker index):");
        for (long load : loads) {
            line.append(' ').append(load);
        }
        System.out.println(line);
        if (r.get("steady_rate") != null) {
            System.out.printf("steady rate %.0f tuples/s over %.2f s after %d warm-up tuples (first tuple %.2f s after submit)%n",
                    r.get("steady_rate"), r.get("steady_seconds"), r.get("warm_up_tuples"), r.get("submit_to_first_tuple_seconds"));
        }
    }
}
