package bench.peers.flink;

import bench.peers.contract.RescaleSchedule;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;

/**
 * The adaptive scheduler's rescale of the running job (protocol ADAPTIVE_RESCALE; Flink's elastic
 * scaling, FLIP-160, with the resource requirements declared through the REST API, FLIP-291): the
 * worker vertex's upper parallelism bound is set to the new worker count ({@code PUT
 * /jobs/:jobid/resource-requirements}); the scheduler restarts the job at that parallelism from the
 * checkpoint that completes next (Flink 2's rescale on checkpoint), and the sources replay the input
 * after it. The job keeps its id; each restart is a new attempt of its tasks. The job checkpoints
 * periodically ({@link RescaleJob}'s checkpoint interval); its state and source offsets come back
 * together, so the state counts every record once (the replayed ones are processed again:
 * {@link Progress} counts them apart).
 */
public final class AdaptiveRescale implements RescaleDriver.Protocol {
    private final ClusterJobs jobs;
    private final RescaleJob job;

    public AdaptiveRescale(ClusterJobs jobs, RescaleJob job) {
        this.jobs = jobs;
        this.job = job;
    }

    @Override
    public JobID start(int workers, long deadlineMs) throws Exception {
        JobID id = jobs.submit(job.graph(workers, 0, null), deadlineMs);
        jobs.awaitRunningAt(id, WorkerFunction.NAME, workers, deadlineMs);
        // The REST client's first call takes seconds here (the JDK's HTTP client starting, the
        // endpoint's first request): made now, so that a rescale's request step is Flink's own.
        jobs.resourceRequirements(id, deadlineMs);
        return id;
    }

    @Override
    public RescaleDriver.Rescaled rescale(JobID id, int from, RescaleSchedule.Event e, long deadlineMs) throws Exception {
        long request = System.currentTimeMillis();
        jobs.requestParallelism(id, WorkerFunction.NAME, e.workers(), deadlineMs);
        long accepted = System.currentTimeMillis();
        Long restarting = null;
        while (restarting == null) {  // the job leaves RUNNING once the scheduler restarts it
            AccessExecutionGraph g = jobs.graph(id, deadlineMs);
            if (g.getState() != JobStatus.RUNNING || ClusterJobs.parallelism(g, WorkerFunction.NAME) != from) {
                restarting = System.currentTimeMillis();
            } else {
                ClusterJobs.pause(deadlineMs, "job " + id + " to restart at " + e.workers() + " workers");
            }
        }
        long running = jobs.awaitRunningAt(id, WorkerFunction.NAME, e.workers(), deadlineMs);
        CheckpointStatsSnapshot stats = jobs.graph(id, deadlineMs).getCheckpointStatsSnapshot();
        RestoredCheckpointStats restored = stats == null ? null : stats.getLatestRestoredCheckpoint();
        Map<String, Object> steps = new LinkedHashMap<>();
        steps.put("request", accepted - request);
        steps.put("wait_for_checkpoint", restarting - accepted);
        steps.put("restart", running - restarting);
        Map<String, Object> m = RescaleDriver.figures(request, running, steps);
        m.put("state_bytes_moved", restored == null ? null : restored.getStateSize());
        m.put("restored_checkpoint", restored == null ? null : restored.getCheckpointId());
        m.put("notes", "Flink's adaptive scheduler: the worker vertex's upper parallelism bound set to " + e.workers()
                + " through the REST API (PUT /jobs/:jobid/resource-requirements); the scheduler restarts the job "
                + "at the new parallelism from the next completed checkpoint, every task restoring its key groups' "
                + "state from it, and the sources replay the input after it. steps: request = the REST call; "
                + "wait_for_checkpoint -> the job left RUNNING (polled every 20 ms); restart -> the last task "
                + "RUNNING again at the new parallelism (Flink's task state timestamps) = in_force. "
                + "state_bytes_moved: the restored checkpoint's state size (Flink's checkpoint statistics), "
                + "all keys, not only the state_entries_moved whose key group changed owner.");
        return new RescaleDriver.Rescaled(id, m);
    }
}
