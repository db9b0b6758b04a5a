package bench.peers.kstreams;

import bench.peers.contract.PeerArguments;
import bench.peers.contract.RescaleSchedule;
import java.util.List;
import java.util.Set;

/**
 * The peer's command line (all {@code --name value}, the rescale peers' contract: {@link PeerArguments},
 * the schedule's syntax {@link RescaleSchedule}). Kafka Streams settings keep their Kafka names: {@code --max.warmup.replicas},
 * {@code --acceptable.recovery.lag}, {@code --probing.rebalance.interval.ms},
 * {@code --num.standby.replicas}, {@code --commit.interval.ms}, {@code --processing.guarantee}.
 * {@code --protocol} is LEARNER, the only protocol this peer runs (Kafka Streams' own scaling).
 *
 * @param bootstrap the Kafka bootstrap servers
 * @param topic the input topic (recorded or paced copy)
 * @param records the number of records the topic will hold
 * @param keyField the JSON string field that is the key
 * @param countField the JSON integer field that is a tuple's count; null: count 1
 * @param workers the initial number of KafkaStreams instances (workers)
 * @param events the rescale events, in time order
 * @param t0Ms the Kafka timestamp (epoch ms) the schedule's times count from
 * @param out the output directory
 * @param timeoutS give up after this many seconds (s)
 * @param units the partitions of the repartition topic (the stateful tasks)
 * @param maxWarmupReplicas Kafka Streams' {@code max.warmup.replicas}
 * @param acceptableRecoveryLag Kafka Streams' {@code acceptable.recovery.lag} (offsets)
 * @param probingRebalanceIntervalMs Kafka Streams' {@code probing.rebalance.interval.ms} (ms, at least 60000)
 * @param numStandbyReplicas Kafka Streams' {@code num.standby.replicas}
 * @param commitIntervalMs Kafka Streams' {@code commit.interval.ms} (ms; 100 is its exactly-once default)
 * @param processingGuarantee Kafka Streams' {@code processing.guarantee}: {@code exactly_once_v2} (the
 *     default: counts stay exact across rebalances) or {@code at_least_once} (for comparison: a
 *     rebalance may then replay tuples into the state, and the run fails its count check)
 */
public record PeerOptions(String bootstrap, String topic, long records, String keyField, String countField,
                          int workers, List<RescaleSchedule.Event> events, long t0Ms, String out, long timeoutS, int units,
                          int maxWarmupReplicas, long acceptableRecoveryLag, long probingRebalanceIntervalMs,
                          int numStandbyReplicas, long commitIntervalMs, String processingGuarantee) {

    /** Kafka Streams' settings, under their Kafka names, and the repartition topic's partitions. */
    private static final Set<String> KAFKA_STREAMS_OPTIONS = Set.of("units", "max.warmup.replicas",
            "acceptable.recovery.lag", "probing.rebalance.interval.ms", "num.standby.replicas", "commit.interval.ms",
            "processing.guarantee");

    /**
     * Parses {@code --name value} pairs ({@link PeerArguments}).
     *
     * @throws IllegalArgumentException on an unknown or missing option, a value that is not a
     *     number where one is needed, or a bad schedule
     */
    public static PeerOptions parse(String[] argv) {
        PeerArguments a = PeerArguments.parse(argv, KAFKA_STREAMS_OPTIONS);
        if (!a.text("protocol", "LEARNER").equalsIgnoreCase("LEARNER")) {
            throw new IllegalArgumentException("--protocol must be LEARNER (Kafka Streams' warm-up tasks)");
        }
        PeerOptions o = new PeerOptions(a.required("bootstrap"), a.required("topic"), a.number("records", null),
                a.text("key-field", "dest"), a.text("count-field", null), (int) a.number("workers", 10L),
                RescaleSchedule.parse(a.text("rescale", null)), a.number("t0-ms", null), a.required("out"),
                a.number("timeout-s", 300L), (int) a.number("units", 128L), (int) a.number("max.warmup.replicas", 128L),
                a.number("acceptable.recovery.lag", 10L), a.number("probing.rebalance.interval.ms", 60000L),
                (int) a.number("num.standby.replicas", 0L), a.number("commit.interval.ms", 100L),
                a.text("processing.guarantee", "exactly_once_v2"));
        if (!List.of("exactly_once_v2", "at_least_once").contains(o.processingGuarantee)) {
            throw new IllegalArgumentException("--processing.guarantee must be exactly_once_v2 or at_least_once");
        }
        if (o.records < 1 || o.workers < 1 || o.units < 1 || o.timeoutS < 1) {
            throw new IllegalArgumentException("--records, --workers, --units and --timeout-s must be at least 1");
        }
        return o;
    }
}
