package bench.peers.kstreams;

import bench.peers.contract.PeerOutputs;
import bench.peers.contract.RescaleSchedule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The Kafka Streams rescale peer (protocol LEARNER: KIP-441's warm-up tasks). See {@link Workers}
 * for the instances and the rescale, {@link RescaleTopology} for the topology, {@link PeerOptions}
 * for the command line.
 *
 * <p>Run: start the W initial instances, wait until they hold every unit, print the contract's ready
 * line ({@link PeerOutputs#READY_LINE}); run each event once it is due (a processed tuple's Kafka
 * timestamp - t0 &gt;= at_ms) and the previous one is in force; once every record is read and every tuple
 * processed, read the final state with interactive queries, close the instances, delete their
 * state and internal topics, write trace.csv, state.csv, result.json and print
 * the result line ({@link PeerOutputs#printResult}). Exit 0 when ok (all N records read, tuples = N -
 * malformed, the state's counts add up to the tuples), 2 otherwise (also for bad options: a one-line error).
 *
 * <p>Defaults and why: {@code --units 128} (the harness's KEY_GROUP count for W = 10);
 * {@code acceptable.recovery.lag 10} (Kafka's 10000 exceeds a unit's whole changelog here, so every
 * instance would count as caught up and tasks would move at once, restoring as active, without
 * warm-up; 0 never counts a warm-up as caught up under exactly-once, whose restored offset stays
 * a commit marker or two below the changelog's end); {@code max.warmup.replicas 128} (Kafka's 2
 * would move two units per probing rebalance, one every minute); {@code probing.rebalance.interval.ms
 * 60000} (Kafka's minimum; its default is 600000); {@code num.standby.replicas 0};
 * {@code processing.guarantee exactly_once_v2} with {@code commit.interval.ms 100} (its default
 * under exactly-once).
 *
 * <p>Beyond the contract, each event also reports {@code due_wall_ms} (when a processed tuple first
 * reached its time), {@code prepare_ms}, {@code warm_up_tasks_max}, {@code rebalances} (instance
 * transitions to REBALANCING), {@code switch_trigger}, {@code units_per_worker} and the two parts of
 * {@code state_entries_moved}; the result adds {@code tuples_reprocessed}, {@code state_keys},
 * {@code state_count} and {@code topics_deleted}.
 */
public final class KafkaStreamsRescalePeer {

    private KafkaStreamsRescalePeer() {}

    /** Entry point; see the class comment. */
    public static void main(String[] argv) throws Exception {
        PeerOptions o;
        try {
            o = PeerOptions.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("kstreams-peer: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path out = Path.of(o.out());
        Files.createDirectories(out);
        long start = System.currentTimeMillis();
        long deadline = start + o.timeoutS() * 1000;
        String appId = "kstreams-peer-" + out.getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_") + "-" + start;
        Progress progress = new Progress(o.events().stream().mapToLong(e -> o.t0Ms() + e.atMs()).toArray());
        Map<String, Object> result = new LinkedHashMap<>();
        List<Map<String, Object>> events = new ArrayList<>();
        List<Workers.StateRow> state = List.of();
        String reason = null;
        Workers workers = new Workers(o, appId, progress);
        try {
            try {
                reason = run(o, workers, progress, deadline, events);
                state = workers.readState(deadline);
            } finally {
                workers.close();
                try {
                    result.put("topics_deleted", workers.deleteInternalTopics().size());
                } catch (Exception e) {
                    log("could not delete the internal topics: " + e);
                }
            }
        } catch (IllegalStateException e) {
            reason = e.getMessage();
        }
        boolean ok = describe(result, o, workers, progress, state, reason);
        result.put("wall_ms", System.currentTimeMillis() - start);
        result.put("events", events);
        PeerOutputs.writeTrace(out, progress.trace());
        PeerOutputs.writeState(out, state.stream().map(Workers.StateRow::contractRow).toList());
        PeerOutputs.writeResult(out, result);
        System.exit(ok ? 0 : 2);
    }

    /**
     * Starts the initial instances, prints {@link PeerOutputs#READY_LINE} once they hold every unit, then runs
     * each event when it is due (adding its entry to {@code events}) until the input is processed.
     *
     * @return null, or why an event never ran
     * @throws IllegalStateException when an instance fails or the deadline (wall epoch ms) passes
     */
    private static String run(PeerOptions o, Workers workers, Progress progress, long deadline,
                              List<Map<String, Object>> events) throws InterruptedException {
        for (int i = 0; i < o.workers(); i++) {
            workers.start(i);
        }
        workers.awaitInForce(deadline, "waiting for the " + o.workers() + " initial instances");
        System.out.println(PeerOutputs.READY_LINE);
        System.out.flush();
        List<RescaleSchedule.Event> pending = new ArrayList<>(o.events());
        while (!pending.isEmpty() || !finished(o, progress)) {
            workers.check(deadline, "waiting for the input (" + progress.recordsRead() + " of " + o.records()
                    + " records read, " + progress.tuplesProcessed() + " tuples processed)");
            if (!pending.isEmpty() && progress.maxTsMs() != Long.MIN_VALUE
                    && progress.maxTsMs() - o.t0Ms() >= pending.get(0).atMs()) {
                events.add(runEvent(workers, pending.remove(0), progress, events.size(), deadline));
            } else if (!pending.isEmpty() && finished(o, progress)) {
                return "rescale event at " + pending.get(0).atMs() + " ms never due: no tuple's Kafka "
                        + "timestamp reached t0 + at_ms";
            } else {
                Thread.sleep(10);
            }
        }
        return null;
    }

    /** Runs event number {@code index}, now due, and returns its entry with {@code due_wall_ms}. */
    private static Map<String, Object> runEvent(Workers workers, RescaleSchedule.Event e, Progress progress, int index,
                                                long deadline) throws InterruptedException {
        log("rescale " + workers.size() + " -> " + e.workers() + " at " + e.atMs() + " ms");
        Map<String, Object> r = workers.rescale(e, deadline);
        long due = progress.dueWallMs(index);
        r.put("due_wall_ms", due);
        long late = (long) r.get("request_wall_ms") - due;
        if (late > 100) {
            r.put("notes", "requested " + late + " ms after it was due: events run one at a time, and "
                    + "the previous one was not in force yet. " + r.get("notes"));
        }
        log("in force after " + ((long) r.get("in_force_wall_ms") - (long) r.get("request_wall_ms"))
                + " ms, steps " + r.get("steps_ms") + ", moved " + ((List<?>) r.get("moved_units")).size());
        return r;
    }

    /**
     * Adds the run's outcome, settings and counts to {@code result}; returns ok: no {@code reason}
     * and the counts add up (every record read, tuples = records - malformed = the state's count).
     */
    private static boolean describe(Map<String, Object> result, PeerOptions o, Workers workers, Progress progress,
                                    List<Workers.StateRow> state, String reason) {
        long stateCount = state.stream().mapToLong(r -> r.state().count()).sum();
        long read = progress.recordsRead();
        long tuples = progress.tuplesProcessed();
        long malformed = progress.malformed();
        if (reason == null && !(read == o.records() && tuples == o.records() - malformed && stateCount == tuples)) {
            reason = "counts do not add up: read " + read + " of " + o.records() + ", tuples " + tuples + ", malformed "
                    + malformed + ", state count " + stateCount;
        }
        result.put("ok", reason == null);
        result.put("reason", reason);
        result.put("system", "kstreams");
        result.put("version", AppInfoParser.getVersion());
        result.put("protocol", "LEARNER");
        Map<String, Object> settings = workers.settings();
        settings.put("units", o.units());
        settings.put("java", System.getProperty("java.version"));
        result.put("settings", settings);
        result.put("records", o.records());
        result.put("records_read", read);
        result.put("tuples_processed", tuples);
        result.put("malformed", malformed);
        result.put("tuples_reprocessed", progress.reprocessed());
        result.put("state_keys", state.size());
        result.put("state_count", stateCount);
        result.put("units", o.units());
        result.put("workers_initial", o.workers());
        return reason == null;
    }

    private static boolean finished(PeerOptions o, Progress p) {
        return p.recordsRead() >= o.records() && p.tuplesProcessed() >= p.recordsRead() - p.malformed();
    }

    private static void log(String s) {
        System.out.println("kstreams-peer: " + s);
        System.out.flush();
    }
}
