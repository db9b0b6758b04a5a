package bench.peers.flink;

import bench.peers.contract.PeerArguments;
import bench.peers.contract.RescaleSchedule;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * The peer's command line ({@link PeerArguments}: all {@code --name value}, the rescale peers' contract):
 * {@code --bootstrap --topic --records --key-field (dest) [--count-field] --workers (10)
 * [--rescale SCHEDULE] [--t0-ms] --out [--timeout-s (300)]} and the Flink settings
 * {@code --max-parallelism} (128: the harness's KEY_GROUP default for W = 10; Flink keeps it
 * across rescales), {@code --buffer-timeout-ms} (100, Flink's {@code execution.buffer-timeout.interval}
 * default), {@code --protocol} (STOP_THE_WORLD: stop-with-savepoint and restore; ADAPTIVE_RESCALE: the
 * adaptive scheduler rescales the running job) and {@code --checkpoint-interval-ms} (Flink's
 * {@code execution.checkpointing.interval}: off for STOP_THE_WORLD, whose savepoint is its only
 * snapshot; 1000 for ADAPTIVE_RESCALE, which restarts from the next checkpoint).
 *
 * @param records      the number of records the topic will hold
 * @param t0Ms         the Kafka-timestamp origin of the schedule, epoch ms
 * @param timeoutS     give up after this many s of wall time
 * @param bufferTimeoutMs Flink's network buffer flush interval, ms
 * @param checkpointIntervalMs Flink's checkpoint interval, ms; 0: no checkpoints
 */
public record PeerOptions(String bootstrap, String topic, long records, String keyField, String countField,
                          int workers, List<RescaleSchedule.Event> schedule, long t0Ms, Path out, long timeoutS,
                          int maxParallelism, long bufferTimeoutMs, String protocol, long checkpointIntervalMs) {

    /** Flink's stop-with-savepoint and restore at the new parallelism. */
    public static final String STOP_THE_WORLD = "STOP_THE_WORLD";
    /** The adaptive scheduler's rescale of the running job from a checkpoint. */
    public static final String ADAPTIVE_RESCALE = "ADAPTIVE_RESCALE";
    /** The protocols this peer runs. */
    public static final Set<String> PROTOCOLS = Set.of(STOP_THE_WORLD, ADAPTIVE_RESCALE);

    /** The Flink settings, besides the peers' common options ({@link PeerArguments#COMMON}). */
    private static final Set<String> FLINK_OPTIONS = Set.of("max-parallelism", "buffer-timeout-ms",
            "checkpoint-interval-ms");

    /**
     * Parses {@code argv}.
     *
     * @throws IllegalArgumentException (one-line message) an unknown or valueless option, a missing
     *     required one, a bad number or schedule, a worker count above the max parallelism, an
     *     unknown protocol, ADAPTIVE_RESCALE without checkpoints
     */
    public static PeerOptions parse(String[] argv) {
        PeerArguments a = PeerArguments.parse(argv, FLINK_OPTIONS);
        List<RescaleSchedule.Event> schedule = RescaleSchedule.parse(a.text("rescale", null));
        String countField = a.text("count-field", "");
        String protocol = a.text("protocol", STOP_THE_WORLD).strip().toUpperCase();
        PeerOptions o = new PeerOptions(a.required("bootstrap"), a.required("topic"), a.number("records", null),
                a.text("key-field", "dest"), countField.isEmpty() ? null : countField,
                (int) a.number("workers", 10L), schedule, a.number("t0-ms", schedule.isEmpty() ? 0L : null),
                Path.of(a.required("out")), a.number("timeout-s", 300L), (int) a.number("max-parallelism", 128L),
                a.number("buffer-timeout-ms", 100L), protocol,
                a.number("checkpoint-interval-ms", protocol.equals(ADAPTIVE_RESCALE) ? 1000L : 0L));
        if (!PROTOCOLS.contains(o.protocol)) {
            throw new IllegalArgumentException("--protocol must be one of " + PROTOCOLS.stream().sorted().toList());
        }
        if (o.checkpointIntervalMs < 0 || (o.protocol.equals(ADAPTIVE_RESCALE) && o.checkpointIntervalMs == 0)) {
            throw new IllegalArgumentException("--checkpoint-interval-ms must be >= 0, and > 0 with "
                    + ADAPTIVE_RESCALE + " (the adaptive scheduler restarts from a checkpoint)");
        }
        if (o.records < 1 || o.timeoutS < 1) {
            throw new IllegalArgumentException("--records and --timeout-s must be >= 1");
        }
        if (o.maxParallelism < 1 || o.maxParallelism > 32768) {
            throw new IllegalArgumentException("--max-parallelism must be in 1..32768 (Flink's bounds)");
        }
        if (o.maxWorkers() > o.maxParallelism || o.workers < 1) {
            throw new IllegalArgumentException("worker counts must be in 1..--max-parallelism (" + o.maxParallelism
                    + "): Flink cannot run more subtasks than key groups");
        }
        return o;
    }

    /** The largest worker count of the run (initial or scheduled): the MiniCluster's slots. */
    public int maxWorkers() {
        return schedule.stream().mapToInt(RescaleSchedule.Event::workers).reduce(workers, Math::max);
    }
}
