package bench.peers.flink;

import bench.peers.contract.PeerOutputs;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * The Flink rescale peer (bench/peers/rescale.py): reads a Kafka topic into a Flink job in a
 * MiniCluster (one TaskManager in this JVM), keeps the harness's per-key worker state in Flink keyed
 * state and rescales it the way {@code --protocol} says ({@link RescaleDriver}): stop-with-savepoint
 * and restore ({@link StopWithSavepoint}), or the adaptive scheduler's rescale of the running job
 * ({@link AdaptiveRescale}). Prints
 * the contract's ready line once the first job runs, then, last, its result line;
 * writes trace.csv, state.csv and result.json to {@code --out} (the peers' contract, {@link PeerOutputs}). Options:
 * {@link PeerOptions}. Exit 0 only when every record was read, every tuple processed and the final
 * state's counts add up to the tuples processed, each record counted once (a record replayed after a
 * restart from a checkpoint is the same record); 2 otherwise (bad options: a one-line error).
 */
public final class FlinkRescalePeer {
    private FlinkRescalePeer() {}

    /**
     * Runs the peer and exits: 0 when ok, 2 otherwise (bad options: a one-line {@code error: ...} on
     * stderr, nothing written). {@code System.exit}, as Flink may leave non-daemon threads behind.
     */
    public static void main(String[] argv) {
        PeerOptions o;
        try {
            o = PeerOptions.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(o));
    }

    /**
     * One run: the job with its rescales, the final state, the outputs (also when it fails: trace.csv
     * and result.json with ok=false and the reason). Returns the exit status (0 ok, 2 not).
     */
    static int run(PeerOptions o) {
        long start = System.currentTimeMillis();
        long deadline = start + o.timeoutS() * 1000;
        Progress.reset();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("ok", false);
        result.put("reason", null);
        result.put("system", "flink");
        result.put("version", EnvironmentInformation.getVersion());
        result.put("protocol", o.protocol());
        List<Map<String, Object>> events = new ArrayList<>();
        List<Records.StateRow> state = List.of();
        String reason = null;
        try {
            Files.createDirectories(o.out());
            int partitions = partitions(o.bootstrap(), o.topic());
            int slots = Math.max(o.maxWorkers(), partitions);
            result.put("settings", settings(o, partitions, slots));
            RescaleJob job = new RescaleJob(RescaleJob.kafka(o.bootstrap(), o.topic()), partitions, o.keyField(),
                    o.countField(), o.maxParallelism(), o.bufferTimeoutMs(), o.checkpointIntervalMs());
            try (ClusterJobs jobs = ClusterJobs.start(slots, clusterSettings(o))) {
                RescaleDriver.Protocol protocol = o.protocol().equals(PeerOptions.ADAPTIVE_RESCALE)
                        ? new AdaptiveRescale(jobs, job) : new StopWithSavepoint(jobs, job, o.out().resolve("savepoints"));
                RescaleDriver.Outcome outcome = new RescaleDriver(jobs, protocol, o.schedule(), o.maxParallelism(),
                        o.t0Ms(), o.records(), o.out().resolve("savepoints"), () -> {
                            System.out.println(PeerOutputs.READY_LINE);
                            System.out.flush();
                        }).run(o.workers(), deadline);
                events = outcome.events();
                state = FinalStateReader.read(jobs.environment(), outcome.savepoint(), outcome.workers(), o.maxParallelism());
            }
            PeerOutputs.writeState(o.out(), state.stream().map(Records.StateRow::contractRow).toList());
            if (events.size() < o.schedule().size()) {
                System.err.println("warning: " + (o.schedule().size() - events.size())
                        + " rescale event(s) never became due (beyond the input's Kafka time)");
            }
        } catch (Exception | LinkageError e) {
            reason = e.getClass().getSimpleName() + ": " + e.getMessage();
            e.printStackTrace();
        }
        long read = Progress.read();
        long processed = Progress.processed();
        long malformed = Progress.malformed();
        long stateCount = state.stream().mapToLong(r -> r.count).sum();
        if (reason == null) {
            if (read != o.records()) {
                reason = "read " + read + " records, expected " + o.records();
            } else if (processed != read - malformed) {
                reason = "processed " + processed + " tuples, expected " + (read - malformed);
            } else if (stateCount != processed) {
                reason = "the final state counts " + stateCount + " tuples, " + processed + " were processed";
            }
        }
        result.put("ok", reason == null);
        result.put("reason", reason);
        result.put("records", o.records());
        result.put("records_read", read);
        result.put("records_reread", Progress.READS.get() - read);
        result.put("tuples_processed", processed);
        result.put("tuples_reprocessed", Progress.PROCESSINGS.get() - processed);
        result.put("malformed", malformed);
        result.put("units", o.maxParallelism());
        result.put("workers_initial", o.workers());
        result.put("state_keys", state.size());
        result.put("wall_ms", System.currentTimeMillis() - start);
        result.put("events", events);
        try {
            PeerOutputs.writeTrace(o.out(), Progress.TRACE.values());
            PeerOutputs.writeResult(o.out(), result);
        } catch (Exception e) {
            e.printStackTrace();
            return 2;
        }
        return reason == null ? 0 : 2;
    }

    private static Map<String, Object> settings(PeerOptions o, int partitions, int slots) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("flink.version", EnvironmentInformation.getVersion());
        s.put("flink-connector-kafka", "5.0.0-2.2");
        s.put("pipeline.max-parallelism", o.maxParallelism());
        s.put("state.backend.type", "hashmap");
        s.put("savepoint.format", "CANONICAL");
        s.put("taskmanager.numberOfTaskSlots", slots);
        s.put("taskmanagers", 1);
        s.put("source.parallelism", partitions);
        s.put("execution.checkpointing.interval",
                o.checkpointIntervalMs() > 0 ? o.checkpointIntervalMs() + " ms" : "off");
        s.put("execution.buffer-timeout.interval_ms", o.bufferTimeoutMs());
        clusterSettings(o).toMap().forEach(s::put);
        if (!s.containsKey(JobManagerOptions.SCHEDULER.key())) {
            s.put(JobManagerOptions.SCHEDULER.key(), "default");
        }
        s.put("key_field", o.keyField());
        s.put("count_field", o.countField());
        return s;
    }

    /**
     * The MiniCluster's settings for the protocol. ADAPTIVE_RESCALE: the adaptive scheduler, with no
     * cooldown after a rescale ({@code executing.cooldown-after-rescaling}, 30 s by default, counts
     * from the job's start too, and a run's event comes seconds after it); the rest at Flink's defaults.
     */
    static Configuration clusterSettings(PeerOptions o) {
        Configuration c = new Configuration();
        if (o.protocol().equals(PeerOptions.ADAPTIVE_RESCALE)) {
            c.set(JobManagerOptions.SCHEDULER, JobManagerOptions.SchedulerType.Adaptive);
            c.set(JobManagerOptions.SCHEDULER_EXECUTING_COOLDOWN_AFTER_RESCALING, Duration.ZERO);
        }
        return c;
    }

    /** The partition count of {@code topic}. */
    static int partitions(String bootstrap, String topic) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        }
    }
}
