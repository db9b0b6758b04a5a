package bench.peers.flink;

import bench.peers.contract.RescaleSchedule;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.apache.flink.api.common.JobID;

/**
 * Runs the job and its rescales: event i is due once a tuple with Kafka timestamp - t0 >= at_ms has
 * been processed, and is carried out by the run's {@link Protocol} (Flink's stop-with-savepoint and
 * restore, {@link StopWithSavepoint}, or the adaptive scheduler's rescale of the running job,
 * {@link AdaptiveRescale}); Flink redistributes the keyed state by key group either way. The run ends
 * once {@code records} records were read and every tuple processed: a last stop-with-savepoint,
 * whose keyed state is read back with the State Processor API.
 */
public final class RescaleDriver {
    private static final long CHECK_JOB_EVERY_MS = 100;

    /**
     * What a run produced.
     *
     * @param events    the rescale events, as result.json lists them
     * @param savepoint the last savepoint (the final state)
     * @param workers   the worker count at the end
     */
    public record Outcome(List<Map<String, Object>> events, String savepoint, int workers) {}

    /** One way to rescale the job. */
    public interface Protocol {
        /** Submits the first job at {@code workers} workers; returns its id once every task runs. */
        JobID start(int workers, long deadlineMs) throws Exception;

        /**
         * Rescales job {@code id} from {@code from} workers to {@code e.workers()}.
         *
         * @return the job now running and the event's own figures for result.json (at least
         *     {@code request_wall_ms}, {@code in_force_wall_ms}, {@code steps_ms}, {@code notes})
         */
        Rescaled rescale(JobID id, int from, RescaleSchedule.Event e, long deadlineMs) throws Exception;
    }

    /** A rescale done: the job running now and the event's figures. */
    public record Rescaled(JobID id, Map<String, Object> figures) {}

    /** An event's figures, to which a protocol adds its own: request and in-force times (epoch ms) and the steps (ms). */
    static Map<String, Object> figures(long requestMs, long inForceMs, Map<String, Object> steps) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("request_wall_ms", requestMs);
        m.put("in_force_wall_ms", inForceMs);
        m.put("steps_ms", steps);
        return m;
    }

    private final ClusterJobs jobs;
    private final Protocol protocol;
    private final List<RescaleSchedule.Event> schedule;
    private final int maxParallelism;
    private final long t0Ms;
    private final long records;
    private final Path savepoints;
    private final Runnable onRunning;

    /**
     * @param t0Ms       the schedule's origin, epoch ms of Kafka time
     * @param records    the records the input holds: the run ends once all were read and processed
     * @param savepoints the directory of the savepoints
     * @param onRunning  called once the first job's tasks all run (the peer prints its ready line)
     */
    public RescaleDriver(ClusterJobs jobs, Protocol protocol, List<RescaleSchedule.Event> schedule, int maxParallelism,
                         long t0Ms, long records, Path savepoints, Runnable onRunning) {
        this.jobs = jobs;
        this.protocol = protocol;
        this.schedule = schedule;
        this.maxParallelism = maxParallelism;
        this.t0Ms = t0Ms;
        this.records = records;
        this.savepoints = savepoints;
        this.onRunning = onRunning;
    }

    /**
     * Runs from {@code workers} workers until the input is done or {@code deadlineMs} (epoch ms).
     *
     * @throws TimeoutException at the deadline; IllegalStateException when a job fails
     */
    public Outcome run(int workers, long deadlineMs) throws Exception {
        List<Map<String, Object>> events = new ArrayList<>();
        JobID id = protocol.start(workers, deadlineMs);
        onRunning.run();
        long lastCheck = System.currentTimeMillis();
        int next = 0;
        while (true) {
            long now = System.currentTimeMillis();
            if (now > deadlineMs) {
                throw new TimeoutException("not done by the deadline: " + Progress.summary(records) + ", " + next
                        + " of " + schedule.size() + " rescale events done");
            }
            long maxTs = Progress.MAX_TS_MS.get();
            if (next < schedule.size() && maxTs != Long.MIN_VALUE && maxTs - t0Ms >= schedule.get(next).atMs()) {
                RescaleSchedule.Event e = schedule.get(next++);
                Progress.GENERATION.incrementAndGet();
                Rescaled r = protocol.rescale(id, workers, e, deadlineMs);
                events.add(event(e, workers, r.figures()));
                id = r.id();
                workers = e.workers();
                continue;
            }
            long read = Progress.read();
            if (read >= records && Progress.processed() + Progress.malformed() >= read) {
                break;
            }
            if (now - lastCheck >= CHECK_JOB_EVERY_MS) {
                jobs.checkRunning(id, deadlineMs);
                lastCheck = now;
            }
            Thread.sleep(1);
        }
        String last = jobs.stopWithSavepoint(id, savepoints, deadlineMs);
        for (int i = 0; i < events.size(); i++) {
            Long first = Progress.FIRST_TUPLE_MS.get(i + 1);
            @SuppressWarnings("unchecked")
            Map<String, Object> steps = (Map<String, Object>) events.get(i).get("steps_ms");
            steps.put("first_tuple", first == null ? null : first - (Long) events.get(i).get("in_force_wall_ms"));
        }
        return new Outcome(events, last, workers);
    }

    /** result.json's event: when, from and to, the key groups and keys that changed owner, then the protocol's figures. */
    private Map<String, Object> event(RescaleSchedule.Event e, int from, Map<String, Object> figures) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("at_ms", e.atMs());
        m.put("from_workers", from);
        m.put("to_workers", e.workers());
        m.put("moved_units", KeyGroups.moved(maxParallelism, from, e.workers()));
        m.put("state_entries_moved", KeyGroups.keysMoved(Progress.KEYS, maxParallelism, from, e.workers()));
        m.putAll(figures);
        return m;
    }
}
