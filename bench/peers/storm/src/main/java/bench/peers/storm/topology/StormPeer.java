package bench.peers.storm.topology;

import groupings.Groupings;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
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
 * per-worker loads and, last, one line {@code STORM_PEER_RESULT <json>} that
 * {@code bench/perf/peers.py} reads. Exit status 0 only when every record of the topic was read and
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
    private static final String RESULT_PREFIX = "STORM_PEER_RESULT ";
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
        Map<String, String> a = parse(argv);
        String bootstrap = required(a, "bootstrap");
        String topic = required(a, "topic");
        long records = Long.parseLong(required(a, "records"));
        String grouping = required(a, "grouping");
        if (!Groupings.NAMES.contains(grouping)) {
            throw new IllegalArgumentException("--grouping must be one of " + Groupings.NAMES);
        }
        int spouts = intOpt(a, "spouts", 10);
        int splitters = intOpt(a, "splitters", 10);
        int workers = intOpt(a, "workers", 10);
        int spoutExecutors = executors(a, "spout-executors", spouts);
        int splitterExecutors = executors(a, "splitter-executors", splitters);
        int workerExecutors = executors(a, "worker-executors", workers);
        double costMs = Double.parseDouble(a.getOrDefault("cost-ms", "0"));
        int costEvery = intOpt(a, "cost-every", 1);
        int windowS = intOpt(a, "window-s", 15);
        double warmUpFraction = Double.parseDouble(a.getOrDefault("warm-up-fraction", "0.1"));
        int maxPollRecords = intOpt(a, "max-poll-records", 500);
        long pollTimeoutMs = Long.parseLong(a.getOrDefault("poll-timeout-ms", "200"));
        int fetchMaxWaitMs = intOpt(a, "fetch-max-wait-ms", 10);
        int producerBatch = intOpt(a, "producer-batch-size", 1);
        int transferBatch = intOpt(a, "transfer-batch-size", 1);
        int flushMs = intOpt(a, "flush-interval-ms", 1);
        long idleTimeoutNs = intOpt(a, "idle-timeout-s", 60) * 1_000_000_000L;
        if (records < 2 || warmUpFraction < 0 || warmUpFraction >= 1) {
            throw new IllegalArgumentException("need --records >= 2 and 0 <= --warm-up-fraction < 1");
        }

        KafkaSpoutConfig<byte[], byte[]> spoutConfig = new KafkaSpoutConfig.Builder<byte[], byte[]>(bootstrap, topic)
                .setProp(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
                .setProp(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
                .setProp(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords)
                .setProp(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, fetchMaxWaitMs)
                .setGroupId("storm-peer-" + topic + "-" + System.currentTimeMillis())
                .setFirstPollOffsetStrategy(FirstPollOffsetStrategy.EARLIEST)
                .setProcessingGuarantee(KafkaSpoutConfig.ProcessingGuarantee.NO_GUARANTEE)
                .setTupleTrackingEnforced(false)
                .setPollTimeoutMs(pollTimeoutMs)
                .setRecordTranslator(new Translate(), new Fields("partition", "offset", "ts", "value"))
                .build();

        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new KafkaSpout<>(spoutConfig), spoutExecutors).setNumTasks(spouts);
        builder.setBolt("splitter", new SplitterBolt("country"), splitterExecutors).setNumTasks(splitters)
                .customGrouping("spout", new PartitionGrouping());
        builder.setBolt("worker", new WorkerBolt(costMs, costEvery, windowS), workerExecutors).setNumTasks(workers)
                .customGrouping("splitter", new ReferenceStreamGrouping(grouping));
        builder.setBolt("aggregator", new AggregatorBolt(), 1).fieldsGrouping("worker", new Fields("key"));

        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(0);
        conf.put(Config.TOPOLOGY_PRODUCER_BATCH_SIZE, producerBatch);
        conf.put(Config.TOPOLOGY_TRANSFER_BATCH_SIZE, transferBatch);
        conf.put(Config.TOPOLOGY_BATCH_FLUSH_INTERVAL_MILLIS, flushMs);

        long warmUp = Math.max(1, (long) Math.floor(warmUpFraction * records));
        PeerProgress.reset(workers, records, warmUp);
        Map<String, Object> result = new LinkedHashMap<>();
        int status;
        long startNanos = System.nanoTime();
        try (LocalCluster cluster = new LocalCluster()) {
            long submitNanos = System.nanoTime();
            long cpuStart = processCpuNanos();
            cluster.submitTopology("storm-peer", conf, builder.createTopology());
            List<long[]> progress = new ArrayList<>();
            String outcome = waitForInput(records, idleTimeoutNs, progress);
            double cpuSeconds = (processCpuNanos() - cpuStart) / 1e9;
            long processed = PeerProgress.PROCESSED.get();
            long emitted = PeerProgress.TUPLES_EMITTED.sum();
            // The last windows close on the next tick: wait for the aggregator to hold every tuple.
            long aggDeadline = System.nanoTime() + (2L * windowS + 10) * 1_000_000_000L;
            while (PeerProgress.AGGREGATED.sum() < processed && System.nanoTime() < aggDeadline) {
                Thread.sleep(100);
            }
            long aggregated = PeerProgress.AGGREGATED.sum();
            long malformed = PeerProgress.MALFORMED.sum();
            long read = PeerProgress.RECORDS.sum();
            boolean ok = outcome.equals("complete") && read == records && processed == emitted
                    && emitted == records - malformed && aggregated == processed;
            status = ok ? 0 : 2;

            long warm = PeerProgress.warmNanos;
            long last = PeerProgress.lastNanos;
            long first = PeerProgress.firstNanos;
            double steady = ok && last > warm && warm > 0 ? (records - warmUp) / ((last - warm) / 1e9) : Double.NaN;
            long[] loads = new long[workers];
            for (int i = 0; i < workers; i++) {
                loads[i] = PeerProgress.workerLoads.get(i);
            }
            result.put("ok", ok);
            result.put("outcome", outcome);
            result.put("grouping", grouping);
            result.put("topic", topic);
            result.put("records_expected", records);
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
            Map<String, Object> settings = new LinkedHashMap<>();
            settings.put("storm_version", org.apache.storm.utils.VersionInfo.getVersion());
            settings.put("tasks", Map.of("spout", spouts, "splitter", splitters, "worker", workers, "aggregator", 1));
            settings.put("executors", Map.of("spout", spoutExecutors, "splitter", splitterExecutors,
                    "worker", workerExecutors, "aggregator", 1));
            settings.put("ackers", 0);
            settings.put("spout_processing_guarantee", "NO_GUARANTEE");
            settings.put("max_poll_records", maxPollRecords);
            settings.put("poll_timeout_ms", pollTimeoutMs);
            settings.put("fetch_max_wait_ms", fetchMaxWaitMs);
            settings.put("producer_batch_size", producerBatch);
            settings.put("transfer_batch_size", transferBatch);
            settings.put("flush_interval_ms", flushMs);
            settings.put("cost_ms", costMs);
            settings.put("cost_every", costEvery);
            settings.put("window_s", windowS);
            settings.put("warm_up_fraction", warmUpFraction);
            settings.put("java", System.getProperty("java.version"));
            result.put("settings", settings);
            KillOptions now = new KillOptions();
            now.set_wait_secs(0); // nothing left to drain: every tuple is counted
            cluster.killTopologyWithOpts("storm-peer", now);
        }
        printHuman(result);
        System.out.println(RESULT_PREFIX + new ObjectMapper().writeValueAsString(result));
        System.out.flush();
        // LocalCluster leaves non-daemon threads (ZooKeeper, timers) behind: leave the JVM now.
        Runtime.getRuntime().halt(status);
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

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("options are --name value pairs, got " + String.join(" ", argv));
            }
            out.put(argv[i].substring(2), argv[i + 1]);
        }
        return out;
    }

    private static String required(Map<String, String> a, String name) {
        String v = a.get(name);
        if (v == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    /** An executor count: at least 1 and at most the component's tasks (a task runs on one executor). */
    private static int executors(Map<String, String> a, String name, int tasks) {
        int n = intOpt(a, name, tasks);
        if (n < 1 || n > tasks) {
            throw new IllegalArgumentException("--" + name + " must be between 1 and the component's " + tasks
                    + " tasks, got " + n);
        }
        return n;
    }

    private static int intOpt(Map<String, String> a, String name, int dflt) {
        return a.containsKey(name) ? Integer.parseInt(a.get(name)) : dflt;
    }
}
