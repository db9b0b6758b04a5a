package bench.peers.flink;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
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
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * Jobs on a Flink {@link MiniCluster} in this JVM: submit, wait until every task is RUNNING,
 * stop-with-savepoint through Flink's {@link org.apache.flink.core.execution.JobClient}, and declare a
 * vertex's parallelism to the adaptive scheduler through the REST API. Every wait
 * ends at an absolute deadline (epoch ms) with a {@link TimeoutException}; a job that fails raises
 * an {@link IllegalStateException} with Flink's failure.
 */
public final class ClusterJobs implements AutoCloseable {
    /** Each poll archives the job's execution graph in the JobMaster: not too often (the times come from Flink). */
    private static final long POLL_MS = 20;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final MiniCluster cluster;
    private final boolean owned;
    private HttpClient http;

    /** Jobs on {@code cluster}; {@code owned}: {@link #close()} closes it. */
    public ClusterJobs(MiniCluster cluster, boolean owned) {
        this.cluster = cluster;
        this.owned = owned;
    }

    /**
     * Starts a MiniCluster: one TaskManager with {@code slots} slots (the jobs' operators share one
     * slot sharing group, so a job needs as many slots as its largest parallelism), the REST endpoint
     * on a free port, 64 MB of managed memory (the HashMap state backend uses none), and
     * {@code settings} (e.g. the adaptive scheduler's) over these.
     */
    public static ClusterJobs start(int slots, Configuration settings) throws Exception {
        Configuration c = new Configuration();
        c.addAll(settings);
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
        graph(id, deadlineMs);
    }

    /** Job {@code id}'s execution graph now. Raises when the job has ended or is failing. */
    public AccessExecutionGraph graph(JobID id, long deadlineMs) throws Exception {
        AccessExecutionGraph g = get(cluster.getExecutionGraph(id), deadlineMs);
        failIfTerminal(g);
        return g;
    }

    /** The parallelism of {@code g}'s job vertex named {@code vertex}. Raises when there is none. */
    public static int parallelism(AccessExecutionGraph g, String vertex) {
        return jobVertex(g, vertex).getParallelism();
    }

    private static AccessExecutionJobVertex jobVertex(AccessExecutionGraph g, String vertex) {
        for (AccessExecutionJobVertex v : g.getVerticesTopologically()) {
            if (v.getName().equals(vertex)) {
                return v;
            }
        }
        throw new IllegalStateException("job " + g.getJobID() + " has no vertex named " + vertex);
    }

    /**
     * Waits until job {@code id} runs its vertex {@code vertex} at {@code parallelism} with every
     * task RUNNING (the adaptive scheduler keeps the job's id across its restarts).
     *
     * @return the wall time, epoch ms, at which the last task switched to RUNNING
     */
    public long awaitRunningAt(JobID id, String vertex, int parallelism, long deadlineMs) throws Exception {
        while (true) {
            AccessExecutionGraph g = graph(id, deadlineMs);
            if (g.getState() == JobStatus.RUNNING && parallelism(g, vertex) == parallelism) {
                boolean all = true;
                long last = 0;
                for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
                    all &= v.getExecutionState() == ExecutionState.RUNNING;
                    last = Math.max(last, v.getStateTimestamp(ExecutionState.RUNNING));
                }
                if (all) {
                    return last;
                }
            }
            pause(deadlineMs, vertex + " of job " + id + " to run at parallelism " + parallelism);
        }
    }

    /**
     * Job {@code id}'s resource requirements, as Flink's REST API gives them ({@code GET
     * /jobs/:jobid/resource-requirements}): {@code {vertex id: {"parallelism": {"lowerBound": n,
     * "upperBound": m}}}}. The first call also starts this object's HTTP client.
     *
     * @throws IllegalStateException when Flink answers with another status than 200
     */
    public ObjectNode resourceRequirements(JobID id, long deadlineMs) throws Exception {
        URI uri = requirementsUri(id);
        HttpResponse<String> r = http().send(HttpRequest.newBuilder(uri).timeout(timeout(deadlineMs)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("GET " + uri + ": HTTP " + r.statusCode() + " " + r.body());
        }
        return (ObjectNode) JSON.readTree(r.body());
    }

    /**
     * Declares {@code parallelism} as the upper bound of job {@code id}'s vertex {@code vertex} (the
     * other vertices' requirements unchanged), the way an operator does it: Flink's REST API, {@code
     * GET} then {@code PUT /jobs/:jobid/resource-requirements} (FLIP-291; adaptive scheduler only).
     *
     * @throws IllegalStateException when Flink refuses it (its HTTP status and body in the message)
     */
    public void requestParallelism(JobID id, String vertex, int parallelism, long deadlineMs) throws Exception {
        String vertexId = jobVertex(graph(id, deadlineMs), vertex).getJobVertexId().toString();
        ObjectNode body = resourceRequirements(id, deadlineMs);
        if (!body.has(vertexId)) {
            throw new IllegalStateException("job " + id + " has no requirements for vertex " + vertex + ": " + body);
        }
        ((ObjectNode) body.get(vertexId).get("parallelism")).put("upperBound", parallelism);
        URI uri = requirementsUri(id);
        HttpResponse<String> put = http().send(HttpRequest.newBuilder(uri).timeout(timeout(deadlineMs))
                        .header("Content-Type", "application/json")
                        .PUT(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (put.statusCode() / 100 != 2) {
            throw new IllegalStateException("PUT " + uri + ": HTTP " + put.statusCode() + " " + put.body());
        }
    }

    private URI requirementsUri(JobID id) throws Exception {
        return cluster.getRestAddress().get().resolve("/jobs/" + id + "/resource-requirements");
    }

    private synchronized HttpClient http() {
        if (http == null) {
            http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        }
        return http;
    }

    private static Duration timeout(long deadlineMs) {
        return Duration.ofMillis(Math.max(1, deadlineMs - System.currentTimeMillis()));
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

    /** Sleeps one poll; raises a {@link TimeoutException} waiting for {@code what} past the deadline. */
    static void pause(long deadlineMs, String what) throws Exception {
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
