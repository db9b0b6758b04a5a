package bench.peers.kstreams;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The peer's command line (all {@code --name value}, the rescale peers' contract) and its rescale
 * schedule. Kafka Streams settings keep their Kafka names: {@code --max.warmup.replicas},
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
                          int workers, List<Event> events, long t0Ms, String out, long timeoutS, int units,
                          int maxWarmupReplicas, long acceptableRecoveryLag, long probingRebalanceIntervalMs,
                          int numStandbyReplicas, long commitIntervalMs, String processingGuarantee) {

    /**
     * One rescale event of the schedule.
     *
     * @param atMs due once a tuple with Kafka timestamp - t0 &gt;= atMs is processed (ms)
     * @param workers the number of workers from then on
     */
    public record Event(long atMs, int workers) {}

    private static final Pattern EVENT = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s):(\\d+)");

    /**
     * Parses the harness's schedule syntax: {@code TIME:COUNT} events separated by commas, TIME a
     * number with unit {@code ms} or {@code s} (e.g. {@code 2499ms:12,3.5s:10}).
     *
     * @param text the schedule; null or blank: no event
     * @return the events, in the given order
     * @throws IllegalArgumentException on bad syntax, a count below 1, or times not increasing
     */
    public static List<Event> parseSchedule(String text) {
        List<Event> events = new ArrayList<>();
        if (text == null || text.isBlank()) {
            return events;
        }
        for (String part : text.split(",", -1)) {
            Matcher m = EVENT.matcher(part.trim());
            if (!m.matches()) {
                throw new IllegalArgumentException("bad rescale event '" + part.trim() + "': expected TIME:COUNT, TIME in ms or s");
            }
            double value = Double.parseDouble(m.group(1));
            long atMs = Math.round(m.group(2).equals("s") ? value * 1000 : value);
            int count = Integer.parseInt(m.group(3));
            if (count < 1) {
                throw new IllegalArgumentException("bad rescale event '" + part.trim() + "': COUNT must be at least 1");
            }
            if (!events.isEmpty() && atMs < events.get(events.size() - 1).atMs()) {
                throw new IllegalArgumentException("rescale events must be in time order: '" + part.trim() + "'");
            }
            events.add(new Event(atMs, count));
        }
        return events;
    }

    /**
     * Parses {@code --name value} pairs.
     *
     * @throws IllegalArgumentException on an unknown or missing option, a value that is not a
     *     number where one is needed, or a bad schedule
     */
    public static PeerOptions parse(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got '" + argv[i] + "'");
            }
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        List<String> known = List.of("bootstrap", "topic", "records", "key-field", "count-field", "workers", "rescale",
                "t0-ms", "out", "timeout-s", "units", "max.warmup.replicas", "acceptable.recovery.lag",
                "probing.rebalance.interval.ms", "num.standby.replicas", "commit.interval.ms", "processing.guarantee",
                "protocol");
        for (String name : a.keySet()) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException("unknown option --" + name);
            }
        }
        if (!a.getOrDefault("protocol", "LEARNER").equalsIgnoreCase("LEARNER")) {
            throw new IllegalArgumentException("--protocol must be LEARNER (Kafka Streams' warm-up tasks)");
        }
        try {
            PeerOptions o = new PeerOptions(required(a, "bootstrap"), required(a, "topic"),
                    Long.parseLong(required(a, "records")), a.getOrDefault("key-field", "dest"),
                    a.getOrDefault("count-field", null), Integer.parseInt(a.getOrDefault("workers", "10")),
                    parseSchedule(a.get("rescale")), Long.parseLong(required(a, "t0-ms")), required(a, "out"),
                    Long.parseLong(a.getOrDefault("timeout-s", "300")), Integer.parseInt(a.getOrDefault("units", "128")),
                    Integer.parseInt(a.getOrDefault("max.warmup.replicas", "128")),
                    Long.parseLong(a.getOrDefault("acceptable.recovery.lag", "10")),
                    Long.parseLong(a.getOrDefault("probing.rebalance.interval.ms", "60000")),
                    Integer.parseInt(a.getOrDefault("num.standby.replicas", "0")),
                    Long.parseLong(a.getOrDefault("commit.interval.ms", "100")),
                    a.getOrDefault("processing.guarantee", "exactly_once_v2"));
            if (!List.of("exactly_once_v2", "at_least_once").contains(o.processingGuarantee)) {
                throw new IllegalArgumentException("--processing.guarantee must be exactly_once_v2 or at_least_once");
            }
            if (o.records < 1 || o.workers < 1 || o.units < 1 || o.timeoutS < 1) {
                throw new IllegalArgumentException("--records, --workers, --units and --timeout-s must be at least 1");
            }
            return o;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a number: " + e.getMessage());
        }
    }

    private static String required(Map<String, String> a, String name) {
        String v = a.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }
}
