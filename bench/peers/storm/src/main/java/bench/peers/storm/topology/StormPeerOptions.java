package bench.peers.storm.topology;

import groupings.Groupings;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Storm peer's options ({@code --name value} pairs; the list and defaults are in
 * {@link StormPeer}'s doc), parsed and checked once.
 *
 * @throws IllegalArgumentException from {@link #parse} on an odd argument list, a missing required
 *     option, an unknown grouping, an executor count outside 1..tasks, fewer than 2 records or a
 *     warm-up fraction outside [0, 1)
 */
final class StormPeerOptions {
    final String bootstrap;
    final String topic;
    final long records;
    final String grouping;
    final int spouts;
    final int splitters;
    final int workers;
    final int spoutExecutors;
    final int splitterExecutors;
    final int workerExecutors;
    final double costMs;
    final int costEvery;
    final int windowS;
    final double warmUpFraction;
    final int maxPollRecords;
    final long pollTimeoutMs;
    final int fetchMaxWaitMs;
    final int producerBatch;
    final int transferBatch;
    final int flushMs;
    final long idleTimeoutNs;

    private StormPeerOptions(Map<String, String> a) {
        bootstrap = required(a, "bootstrap");
        topic = required(a, "topic");
        records = Long.parseLong(required(a, "records"));
        grouping = required(a, "grouping");
        if (!Groupings.NAMES.contains(grouping)) {
            throw new IllegalArgumentException("--grouping must be one of " + Groupings.NAMES);
        }
        spouts = intOpt(a, "spouts", 10);
        splitters = intOpt(a, "splitters", 10);
        workers = intOpt(a, "workers", 10);
        spoutExecutors = executors(a, "spout-executors", spouts);
        splitterExecutors = executors(a, "splitter-executors", splitters);
        workerExecutors = executors(a, "worker-executors", workers);
        costMs = Double.parseDouble(a.getOrDefault("cost-ms", "0"));
        costEvery = intOpt(a, "cost-every", 1);
        windowS = intOpt(a, "window-s", 15);
        warmUpFraction = Double.parseDouble(a.getOrDefault("warm-up-fraction", "0.1"));
        maxPollRecords = intOpt(a, "max-poll-records", 500);
        pollTimeoutMs = Long.parseLong(a.getOrDefault("poll-timeout-ms", "200"));
        fetchMaxWaitMs = intOpt(a, "fetch-max-wait-ms", 10);
        producerBatch = intOpt(a, "producer-batch-size", 1);
        transferBatch = intOpt(a, "transfer-batch-size", 1);
        flushMs = intOpt(a, "flush-interval-ms", 1);
        idleTimeoutNs = intOpt(a, "idle-timeout-s", 60) * 1_000_000_000L;
        if (records < 2 || warmUpFraction < 0 || warmUpFraction >= 1) {
            throw new IllegalArgumentException("need --records >= 2 and 0 <= --warm-up-fraction < 1");
        }
    }

    static StormPeerOptions parse(String[] argv) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("options are --name value pairs, got " + String.join(" ", argv));
            }
            out.put(argv[i].substring(2), argv[i + 1]);
        }
        return new StormPeerOptions(out);
    }

    /** The tuples of the warm-up share: at least 1. */
    long warmUpTuples() {
        return Math.max(1, (long) Math.floor(warmUpFraction * records));
    }

    /** The result's {@code settings}: Storm's version, the tasks and executors, every setting, Java's version. */
    Map<String, Object> settings() {
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
        return settings;
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
