package bench.peers.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bench.peers.contract.RescaleSchedule;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The adaptive scheduler rescaling the running job 2 -> 3 workers ({@link AdaptiveRescale}: the
 * worker vertex's parallelism declared through the REST API) on Flink's own MiniClusterExtension with
 * the peer's adaptive settings, on the in-memory source of {@link SavepointRescaleTest}, which the
 * restart rewinds to the checkpoint: the records after it are read and processed again, and the
 * final state still counts each record once.
 */
class AdaptiveRescaleTest {
    private static final int VALID = SavepointRescaleTest.VALID;

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setConfiguration(adaptive()).setNumberTaskManagers(1).setNumberSlotsPerTaskManager(3).build());

    private static Configuration adaptive() {
        PeerOptions o = PeerOptions.parse("--bootstrap b --topic t --records 1 --out /tmp/x --protocol ADAPTIVE_RESCALE"
                .split(" "));
        Configuration c = FlinkRescalePeer.clusterSettings(o);
        assertEquals(JobManagerOptions.SchedulerType.Adaptive, c.get(JobManagerOptions.SCHEDULER));
        assertEquals(Duration.ZERO, c.get(JobManagerOptions.SCHEDULER_EXECUTING_COOLDOWN_AFTER_RESCALING));
        return c;
    }

    @Test
    void theRunningJobRescalesFromACheckpointAndCountsEachRecordOnce(@InjectMiniCluster MiniCluster cluster,
                                                                    @TempDir Path dir) throws Exception {
        Progress.reset();
        RescaleJob job = new RescaleJob(() -> new DataGeneratorSource<>(new SavepointRescaleTest.Generator(),
                Long.MAX_VALUE, SavepointRescaleTest.pausedUntilTheRescale(), TypeInformation.of(Records.Raw.class)), 1, "dest",
                "n", 128, 10, 200);
        long deadline = System.currentTimeMillis() + 120_000;
        ClusterJobs jobs = new ClusterJobs(cluster, false);
        RescaleDriver.Outcome outcome = new RescaleDriver(jobs, new AdaptiveRescale(jobs, job),
                List.of(new RescaleSchedule.Event(VALID / 2, 3)), 128, SavepointRescaleTest.T0, VALID, dir.resolve("savepoints"), () -> {})
                .run(2, deadline);

        assertEquals(1, outcome.events().size());
        Map<String, Object> e = outcome.events().get(0);
        assertEquals(KeyGroups.moved(128, 2, 3), e.get("moved_units"));
        assertNotNull(e.get("restored_checkpoint"), "restarted from a checkpoint");
        assertTrue((Long) e.get("in_force_wall_ms") >= (Long) e.get("request_wall_ms"));
        assertEquals(3, outcome.workers());
        assertEquals(VALID, Progress.processed(), "every valid record processed");
        assertTrue(Progress.READS.get() >= Progress.read(), "records after the checkpoint may be read twice");
        assertTrue(Progress.FIRST_TUPLE_MS.containsKey(1), "the restarted job's workers processed tuples");

        List<Records.StateRow> state = FinalStateReader.read(StreamExecutionEnvironment.getExecutionEnvironment(),
                outcome.savepoint(), 3, 128);
        SavepointRescaleTest.assertExact(state, 3);  // each record counted once through the replay
    }
}
