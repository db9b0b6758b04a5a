package bench.peers.flink;

import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * Jobs on a Flink {@link MiniCluster} in this JVM: submit, wait until every task is RUNNING, and
 * stop-with-savepoint through Flink's {@link org.apache.flink.core.execution.JobClient}. Every wait
 * ends at an absolute deadline (epoch ms) with a {@link TimeoutException}; a job that fails raises
 * an {@link IllegalStateException} with Flink's failure.
 */
public final class ClusterJobs implements AutoCloseable {
    /** Each poll archives the job's execution graph in the JobMaster: not too often (the times come from Flink). */
    private static final long POLL_MS = 20;
    private final MiniCluster cluster;
    private final boolean owned;

    /** Jobs on {@code cluster}; {@code owned}: {@link #close()} closes it. */
    public ClusterJobs(MiniCluster cluster, boolean owned) {
        this.cluster = cluster;
        this.owned = owned;
    }

    /**
     * Starts a MiniCluster: one TaskManager with {@code slots} slots (the jobs' operators share one
     * slot sharing group, so a job needs as many slots as its largest parallelism), the REST endpoint
     * on a free port, 64 MB of managed memory (the HashMap state backend uses none).
     */
    public static ClusterJobs start(int slots) throws Exception {
        Configuration c = new Configuration();
        c.set(RestOptions.BIND_PORT, "0");
        c.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("64m"));
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(c)
                .setNumTaskManagers(1).setNumSlotsPerTaskManager(slots).build());
        cluster.start();
        return new ClusterJobs(cluster, true);
    }

    /** Submits {@code graph}; returns its job id once the dispatcher accepted it. */
    public JobID submit(StreamGraph graph, long deadlineMs) throws Exception {
        return get(cluster.submitJob(graph), deadlineMs).getJobID();
    }

    /**
     * Waits until every task (execution vertex) of job {@code id} is RUNNING.
     *
     * @return the wall time, epoch ms, at which the last of them switched to RUNNING (Flink's
     *     per-task state timestamps; the wait itself polls every {@value #POLL_MS} ms)
     */
    public long awaitAllRunning(JobID id, long deadlineMs) throws Exception {
        while (true) {
            AccessExecutionGraph g = get(cluster.getExecutionGraph(id), deadlineMs);
            failIfTerminal(g);
            boolean all = g.getState() == JobStatus.RUNNING;
            int tasks = 0;
            long last = 0;
            for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
                all &= v.getExecutionState() == ExecutionState.RUNNING;
                last = Math.max(last, v.getStateTimestamp(ExecutionState.RUNNING));
                tasks++;
            }
            if (all && tasks > 0) {
                return last;
            }
            pause(deadlineMs, "the tasks of job " + id + " to run");
        }
    }

    /** Raises when job {@code id} has ended (failed, cancelled or finished): it should run until stopped. */
    public void checkRunning(JobID id, long deadlineMs) throws Exception {
        failIfTerminal(get(cluster.getExecutionGraph(id), deadlineMs));
    }

    /**
     * Flink's stop-with-savepoint ({@code JobClient#stopWithSavepoint(false, dir, CANONICAL)}: sources
     * stop, a synchronous savepoint in Flink's canonical format is taken, the job finishes), then
     * waits for the job's end.
     *
     * @return the savepoint's path (a directory under {@code dir})
     */
    public String stopWithSavepoint(JobID id, Path dir, long deadlineMs) throws Exception {
        MiniClusterJobClient client = new MiniClusterJobClient(id, cluster, getClass().getClassLoader(),
                MiniClusterJobClient.JobFinalizationBehavior.NOTHING);
        String path = get(client.stopWithSavepoint(false, dir.toAbsolutePath().toUri().toString(),
                SavepointFormatType.CANONICAL), deadlineMs);
        get(cluster.requestJobResult(id), deadlineMs);
        return path;
    }

    /**
     * An environment that runs its jobs on this MiniCluster: a remote environment on its REST
     * endpoint (the job's classes are on this JVM's classpath, so no jar is shipped), parallelism 1.
     */
    public StreamExecutionEnvironment environment() throws Exception {
        URI rest = cluster.getRestAddress().get();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(rest.getHost(),
                rest.getPort(), new Configuration());
        env.setParallelism(1);
        return env;
    }

    /** The MiniCluster (for a test). */
    public MiniCluster cluster() {
        return cluster;
    }

    @Override
    public void close() throws Exception {
        if (owned) {
            cluster.close();
        }
    }

    private static void failIfTerminal(AccessExecutionGraph g) {
        JobStatus s = g.getState();
        if (s.isGloballyTerminalState() || s == JobStatus.FAILING) {
            String cause = g.getFailureInfo() == null ? "" : ": " + g.getFailureInfo().getExceptionAsString();
            throw new IllegalStateException("job " + g.getJobID() + " is " + s + cause);
        }
    }

    private static void pause(long deadlineMs, String what) throws Exception {
        if (System.currentTimeMillis() > deadlineMs) {
            throw new TimeoutException("timed out waiting for " + what);
        }
        Thread.sleep(POLL_MS);
    }

    private static <T> T get(java.util.concurrent.CompletableFuture<T> f, long deadlineMs) throws Exception {
        try {
            return f.get(Math.max(1, deadlineMs - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
    }
}
