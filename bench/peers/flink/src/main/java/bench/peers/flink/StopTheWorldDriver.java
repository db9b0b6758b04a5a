package bench.peers.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;

/**
 * Runs the job and its rescales the way Flink rescales (protocol STOP_THE_WORLD, Volley's
 * stop-the-world baseline): when an event is due, stop-with-savepoint, then submit the same job
 * again restored from that savepoint at the new worker parallelism; Flink redistributes the keyed
 * state by key group. Event i is due once a tuple with Kafka timestamp - t0 >= at_ms has been
 * processed. The run ends once {@code records} records were read and every tuple processed: a last
 * stop-with-savepoint, whose keyed state is read back with the State Processor API.
 */
public final class StopTheWorldDriver {
    private static final long CHECK_JOB_EVERY_MS = 100;

    /**
     * What a run produced.
     *
     * @param events    the rescale events, as result.json lists them
     * @param savepoint the last savepoint (the final state)
     * @param workers   the worker count at the end
     */
    public record Outcome(List<Map<String, Object>> events, String savepoint, int workers) {}

    private final ClusterJobs jobs;
    private final RescaleJob job;
    private final List<Schedule.Event> schedule;
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
    public StopTheWorldDriver(ClusterJobs jobs, RescaleJob job, List<Schedule.Event> schedule, int maxParallelism,
                              long t0Ms, long records, Path savepoints, Runnable onRunning) {
        this.jobs = jobs;
        this.job = job;
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
        List<Long> inForce = new ArrayList<>();
        int generation = 0;
        JobID id = jobs.submit(job.graph(workers, generation, null), deadlineMs);
        jobs.awaitAllRunning(id, deadlineMs);
        onRunning.run();
        long lastCheck = System.currentTimeMillis();
        int next = 0;
        while (true) {
            long now = System.currentTimeMillis();
            if (now > deadlineMs) {
                throw new TimeoutException("not done by the deadline: read " + Progress.READ.get() + " of " + records
                        + " records, processed " + Progress.PROCESSED.get() + " tuples, " + Progress.MALFORMED.get()
                        + " malformed, " + next + " of " + schedule.size() + " rescale events done");
            }
            long maxTs = Progress.MAX_TS_MS.get();
            if (next < schedule.size() && maxTs != Long.MIN_VALUE && maxTs - t0Ms >= schedule.get(next).atMs()) {
                Schedule.Event e = schedule.get(next++);
                long request = System.currentTimeMillis();
                String savepoint = jobs.stopWithSavepoint(id, savepoints, deadlineMs);
                long stopped = System.currentTimeMillis();
                generation++;
                id = jobs.submit(job.graph(e.workers(), generation, savepoint), deadlineMs);
                long running = jobs.awaitAllRunning(id, deadlineMs);
                events.add(event(e, workers, request, stopped, running, savepoint));
                inForce.add(running);
                workers = e.workers();
                continue;
            }
            long read = Progress.READ.get();
            if (read >= records && Progress.PROCESSED.get() + Progress.MALFORMED.get() >= read) {
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
            steps.put("first_tuple", first == null ? null : first - inForce.get(i));
        }
        return new Outcome(events, last, workers);
    }

    private Map<String, Object> event(Schedule.Event e, int from, long request, long stopped, long running,
                                      String savepoint) {
        Map<String, Object> steps = new LinkedHashMap<>();
        steps.put("savepoint", stopped - request);
        steps.put("restore", running - stopped);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("at_ms", e.atMs());
        m.put("from_workers", from);
        m.put("to_workers", e.workers());
        m.put("request_wall_ms", request);
        m.put("in_force_wall_ms", running);
        m.put("moved_units", KeyGroups.moved(maxParallelism, from, e.workers()));
        m.put("steps_ms", steps);
        m.put("state_entries_moved", KeyGroups.keysMoved(Progress.KEYS, maxParallelism, from, e.workers()));
        m.put("state_bytes_moved", bytes(localPath(savepoint)));
        m.put("notes", "Flink stop-with-savepoint (canonical format, HashMap backend) then restore at "
                + e.workers() + ": every key's state is written to the savepoint and read back by its owner at the new "
                + "parallelism (" + Progress.KEYS.size() + " keys, all of them, not only the "
                + "state_entries_moved whose key group changed owner); state_bytes_moved is the savepoint's size. "
                + "in_force = the last task of the restored job switched to RUNNING (Flink's task state "
                + "timestamps); first_tuple = in_force -> first tuple processed by the restored job: it includes "
                + "waiting for input, and is negative when some of its tasks processed tuples before its last "
                + "task ran (Flink starts tasks independently).");
        m.put("savepoint", savepoint);
        return m;
    }

    /** A savepoint path ({@code file:/...} or a plain path) as a local path. */
    static Path localPath(String savepoint) {
        return savepoint.startsWith("file:") ? Path.of(java.net.URI.create(savepoint)) : Path.of(savepoint);
    }

    /** The bytes of the files under {@code dir}. */
    static long bytes(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            }).sum();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
