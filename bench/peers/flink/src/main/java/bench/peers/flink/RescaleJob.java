package bench.peers.flink;

import java.io.Serializable;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * The job graph: {@code source xP -> parse xP (chained) --keyBy(key)--> worker xW}, max parallelism
 * fixed for the whole run (Flink restores keyed state only at the same max parallelism). The same
 * graph (same operator uids) is built for every generation, at the generation's worker count, and,
 * after a rescale, restored from a savepoint ({@code execution.savepoint.path}).
 */
public final class RescaleJob {
    /** Makes the job's source (a fresh one per submission). */
    public interface SourceFactory extends Serializable {
        Source<Records.Raw, ?, ?> create();
    }

    private final SourceFactory source;
    private final int sourceParallelism;
    private final String keyField;
    private final String countField;
    private final int maxParallelism;
    private final long bufferTimeoutMs;
    private final long checkpointIntervalMs;

    /**
     * @param sourceParallelism    the source's (and parse's) parallelism: the topic's partition count
     * @param countField           null: every tuple counts 1
     * @param bufferTimeoutMs      Flink's network buffer flush interval, ms
     * @param checkpointIntervalMs Flink's {@code execution.checkpointing.interval}, ms; 0: no checkpoints
     */
    public RescaleJob(SourceFactory source, int sourceParallelism, String keyField, String countField,
                      int maxParallelism, long bufferTimeoutMs, long checkpointIntervalMs) {
        this.source = source;
        this.sourceParallelism = sourceParallelism;
        this.keyField = keyField;
        this.countField = countField;
        this.maxParallelism = maxParallelism;
        this.bufferTimeoutMs = bufferTimeoutMs;
        this.checkpointIntervalMs = checkpointIntervalMs;
    }

    /**
     * The job's graph at {@code workers} workers.
     *
     * @param generation  0 for the first job, +1 per restore (names the job)
     * @param restorePath the savepoint to restore from, null for a fresh start
     */
    public StreamGraph graph(int workers, int generation, String restorePath) {
        Configuration conf = new Configuration();
        if (restorePath != null) {
            conf.set(StateRecoveryOptions.SAVEPOINT_PATH, restorePath);
        }
        if (checkpointIntervalMs > 0) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(checkpointIntervalMs));
        }
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
        env.setParallelism(sourceParallelism);
        env.setMaxParallelism(maxParallelism);
        env.setBufferTimeout(bufferTimeoutMs);
        env.fromSource(source.create(), WatermarkStrategy.noWatermarks(), "source").uid("source")
                .flatMap(new ParseFunction(keyField, countField)).name("parse").uid("parse")
                .keyBy(new WorkerFunction.TupleKey())
                .process(new WorkerFunction()).name(WorkerFunction.NAME).uid(WorkerFunction.UID).setParallelism(workers);
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("flink-rescale-peer #" + generation + " (" + workers + " workers)");
        return graph;
    }

    /**
     * The Kafka source of the peer: every partition of {@code topic} from the earliest offset (a job
     * restored from a savepoint or restarted from a checkpoint resumes at its offsets instead), offsets not committed
     * (the savepoint holds them), records read by {@link RecordDeserializer}.
     */
    public static SourceFactory kafka(String bootstrap, String topic) {
        String group = "flink-rescale-peer-" + topic + "-" + System.currentTimeMillis();
        return () -> KafkaSource.<Records.Raw>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId(group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new RecordDeserializer())
                .setProperty("commit.offsets.on.checkpoint", "false")
                .build();
    }
}
