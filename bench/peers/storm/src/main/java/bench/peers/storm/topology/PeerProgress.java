package bench.peers.storm.topology;

import java.time.Instant;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;

/**
 * What the peer counts while the topology runs. LocalCluster runs every executor in this JVM, so
 * the bolts (deserialised copies) and the main thread share these static counters; a topology on
 * a real cluster would need Storm metrics instead.
 *
 * <p>Throughput clock: {@link #tupleProcessed} is called by a worker bolt once a tuple's simulated
 * cost and window update are done. The tuple that brings the count to the warm-up threshold and the
 * one that brings it to the expected total stamp {@code System.nanoTime()}: the steady rate is
 * {@code (expected - warmUp) / (last - warm)} tuples/s.
 *
 * <p>Latency: each worker bolt task records into an HdrHistogram of its own ({@link
 * #newLatencyHistogram}: the harness worker task's range, 1 µs to 24 h, and 3 significant digits),
 * guarded by the histogram itself so that {@link #latency} can merge them while the tasks run.
 */
public final class PeerProgress {
    static final LongAdder RECORDS = new LongAdder();
    static final LongAdder MALFORMED = new LongAdder();
    static final LongAdder TUPLES_EMITTED = new LongAdder();
    static final AtomicLong PROCESSED = new AtomicLong();
    static final LongAdder AGGREGATED = new LongAdder();
    static final LongAdder WINDOW_EMITS = new LongAdder();
    static volatile AtomicLongArray workerLoads = new AtomicLongArray(0);
    static volatile long warmUpTuples = Long.MAX_VALUE;
    static volatile long expectedTuples = Long.MAX_VALUE;
    static volatile long firstNanos;
    static volatile long warmNanos;
    static volatile long lastNanos;
    static final long LOWEST_US = 1;
    static final long HIGHEST_US = 24L * 3600 * 1_000_000;
    static final int SIGNIFICANT_DIGITS = 3;
    static final ConcurrentLinkedQueue<Histogram> LATENCIES = new ConcurrentLinkedQueue<>();

    private PeerProgress() {}

    /** Before the topology is submitted: W workers, the tuples expected, the warm-up threshold. */
    static void reset(int workers, long expected, long warmUp) {
        RECORDS.reset();
        MALFORMED.reset();
        TUPLES_EMITTED.reset();
        PROCESSED.set(0);
        AGGREGATED.reset();
        WINDOW_EMITS.reset();
        workerLoads = new AtomicLongArray(workers);
        expectedTuples = expected;
        warmUpTuples = warmUp;
        firstNanos = 0;
        warmNanos = 0;
        lastNanos = 0;
        LATENCIES.clear();
    }

    /** A new worker bolt task's latency histogram, registered for {@link #latency}. */
    static Histogram newLatencyHistogram() {
        Histogram histogram = new Histogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS);
        LATENCIES.add(histogram);
        return histogram;
    }

    /** Record one tuple's latency (µs, clipped to the histogram's range). */
    static void record(Histogram histogram, long latencyUs) {
        synchronized (histogram) {
            histogram.recordValue(Math.min(Math.max(latencyUs, LOWEST_US), HIGHEST_US));
        }
    }

    /** Every worker bolt task's latencies so far, merged (a copy). */
    static Histogram latency() {
        Histogram merged = new Histogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS);
        for (Histogram histogram : LATENCIES) {
            synchronized (histogram) {
                merged.add(histogram);
            }
        }
        return merged;
    }

    /** Epoch microseconds, as the harness's worker task stamps a tuple done. */
    static long nowUs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
    }

    /**
     * A worker bolt finished one tuple; returns whether the tuple is past the warm-up (its latency
     * is recorded).
     */
    static boolean tupleProcessed(int workerIndex) {
        workerLoads.incrementAndGet(workerIndex);
        long count = PROCESSED.incrementAndGet();
        if (count == 1) {
            firstNanos = System.nanoTime();
        }
        if (count == warmUpTuples) {
            warmNanos = System.nanoTime();
        }
        if (count == expectedTuples) {
            lastNanos = System.nanoTime();
        }
        return count > warmUpTuples;
    }
}
