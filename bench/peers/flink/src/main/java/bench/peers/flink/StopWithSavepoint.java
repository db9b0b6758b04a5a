package bench.peers.flink;

import bench.peers.contract.RescaleSchedule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;

/**
 * Flink's own rescale of a job (protocol STOP_THE_WORLD, Volley's stop-the-world baseline):
 * stop-with-savepoint, then the same job submitted again, restored from that savepoint at the new
 * worker parallelism. Each job is a generation ({@link Progress#GENERATION}): 0 first, +1 per restore.
 */
public final class StopWithSavepoint implements RescaleDriver.Protocol {
    private final ClusterJobs jobs;
    private final RescaleJob job;
    private final Path savepoints;

    /** @param savepoints the directory of the savepoints */
    public StopWithSavepoint(ClusterJobs jobs, RescaleJob job, Path savepoints) {
        this.jobs = jobs;
        this.job = job;
        this.savepoints = savepoints;
    }

    @Override
    public JobID start(int workers, long deadlineMs) throws Exception {
        JobID id = jobs.submit(job.graph(workers, Progress.GENERATION.get(), null), deadlineMs);
        jobs.awaitAllRunning(id, deadlineMs);
        return id;
    }

    @Override
    public RescaleDriver.Rescaled rescale(JobID id, int from, RescaleSchedule.Event e, long deadlineMs) throws Exception {
        long request = System.currentTimeMillis();
        String savepoint = jobs.stopWithSavepoint(id, savepoints, deadlineMs);
        long stopped = System.currentTimeMillis();
        JobID restored = jobs.submit(job.graph(e.workers(), Progress.GENERATION.get(), savepoint), deadlineMs);
        long running = jobs.awaitAllRunning(restored, deadlineMs);
        Map<String, Object> steps = new LinkedHashMap<>();
        steps.put("savepoint", stopped - request);
        steps.put("restore", running - stopped);
        Map<String, Object> m = RescaleDriver.figures(request, running, steps);
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
        return new RescaleDriver.Rescaled(restored, m);
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
