package bench.peers.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bench.peers.contract.PeerOutputs.TraceRow;
import bench.peers.contract.RescaleSchedule;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * One stop-with-savepoint and restore at a new parallelism (2 -> 3 workers) on Flink's own
 * MiniClusterExtension, driven by {@link RescaleDriver} with {@link StopWithSavepoint}, on an in-memory source; the final
 * state is read back with the State Processor API (on the extension's test environment, the same
 * MiniCluster) and must be exact.
 */
class SavepointRescaleTest {
    static final int VALID = 2_000;
    static final int KEYS = 10;
    static final long T0 = 1_000_000;

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(3).build());

    /**
     * Record i < VALID: key K(i mod 10), count n = i mod 3 + 1, Kafka time T0 + i; after those, records
     * without a value (malformed) so that the source never finishes (stop-with-savepoint needs a
     * running job). Counts its records as the Kafka deserializer does.
     */
    static final class Generator implements GeneratorFunction<Long, Records.Raw> {
        @Override
        public Records.Raw map(Long i) {
            Progress.read(i);
            String value = i < VALID ? "{\"dest\":\"K" + (i % KEYS) + "\",\"n\":" + (i % 3 + 1) + "}" : null;
            return new Records.Raw(i, value, T0 + Math.min(i, VALID - 1), -1);
        }
    }

    /** The first job's source pauses after this many records (see {@link #pausedUntilTheRescale}). */
    static final int FIRST_JOB_RECORDS = VALID * 3 / 4;

    /**
     * 1,000 records/s, where the first job's source (generation 0) pauses after FIRST_JOB_RECORDS, past
     * the rescale at record VALID / 2: the rest of the input is left to the job after the rescale
     * whatever the rescale takes. With the input at 1,000 records/s alone, a rescale slower than the 1 s
     * left of it (on a loaded 2-core machine) left the new workers nothing to process. The pause is an
     * availability future that never completes, so the task's mailbox still takes checkpoint barriers
     * and the stop; the new job's readers, created after the driver has raised the generation, do not pause.
     */
    @SuppressWarnings("unchecked")  // perSecond's strategy is raw
    static RateLimiterStrategy<NumberSequenceSplit> pausedUntilTheRescale() {
        return parallelism -> {
            RateLimiter<NumberSequenceSplit> rate = RateLimiterStrategy.perSecond(1_000).createRateLimiter(parallelism);
            if (Progress.GENERATION.get() > 0) {
                return rate;
            }
            AtomicInteger left = new AtomicInteger(FIRST_JOB_RECORDS / parallelism);
            return n -> left.addAndGet(-n) >= 0 ? rate.acquire(n) : new CompletableFuture<>();
        };
    }

    @Test
    void restoredStateIsExactAfterRescale(@InjectMiniCluster MiniCluster cluster, @TempDir Path dir) throws Exception {
        Progress.reset();
        RescaleJob job = new RescaleJob(() -> new DataGeneratorSource<>(new Generator(), Long.MAX_VALUE,
                pausedUntilTheRescale(), TypeInformation.of(Records.Raw.class)), 1, "dest", "n", 128, 10, 0);
        long deadline = System.currentTimeMillis() + 120_000;
        ClusterJobs jobs = new ClusterJobs(cluster, false);
        RescaleDriver.Outcome outcome = new RescaleDriver(jobs, new StopWithSavepoint(jobs, job, dir.resolve("savepoints")),
                List.of(new RescaleSchedule.Event(VALID / 2, 3)), 128, T0, VALID, dir.resolve("savepoints"), () -> {}).run(2, deadline);

        assertEquals(1, outcome.events().size());
        Map<String, Object> e = outcome.events().get(0);
        assertEquals(KeyGroups.moved(128, 2, 3), e.get("moved_units"));
        assertTrue((Long) e.get("state_bytes_moved") > 0);
        assertEquals(3, outcome.workers());
        assertEquals(VALID, Progress.processed(), "every valid record processed across the restore");
        assertEquals(VALID, Progress.PROCESSINGS.get(), "and each once: a savepoint replays nothing");
        assertTrue(Progress.FIRST_TUPLE_MS.containsKey(1), "the restored job processed tuples");

        List<Records.StateRow> state = FinalStateReader.read(StreamExecutionEnvironment.getExecutionEnvironment(), outcome.savepoint(), 3, 128);
        assertExact(state, 3);
        // Each tuple was processed by the owner of its key group at the parallelism of its job.
        for (TraceRow t : Progress.TRACE.values()) {
            assertTrue(t.worker() == KeyGroups.owner(t.unit(), 128, 2) || t.worker() == KeyGroups.owner(t.unit(), 128, 3));
        }
    }

    /**
     * {@code state} is the {@link Generator}'s exactly: per key its count, sum, first and last Kafka
     * time, at the owner of its key group among {@code workers} workers (max parallelism 128).
     */
    static void assertExact(List<Records.StateRow> state, int workers) {
        assertEquals(KEYS, state.size());
        for (Records.StateRow r : state) {
            int k = Integer.parseInt(r.key.substring(1));
            long sum = 0;
            for (int i = k; i < VALID; i += KEYS) {
                sum += i % 3 + 1;
            }
            assertEquals(VALID / KEYS, r.count, r.key);
            assertEquals(sum, r.sum, r.key);
            assertEquals(T0 + k, r.firstTsMs, r.key);
            assertEquals(T0 + VALID - KEYS + k, r.lastTsMs, r.key);
            assertEquals(KeyGroups.owner(KeyGroups.unit(r.key, 128), 128, workers), r.worker);
        }
    }
}
