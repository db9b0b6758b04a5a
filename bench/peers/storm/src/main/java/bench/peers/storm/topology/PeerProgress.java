package bench.peers.storm.topology;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the peer counts while the topology runs. LocalCluster runs every executor in this JVM, so
 * the bolts (deserialised copies) and the main thread share these static counters; a topology on
 * a real cluster would need Storm metrics instead.
 *
 * <p>Throughput clock: {@link #tupleProcessed} is called by a worker bolt once a tuple's simulated
 * cost and window update are done. The tuple that brings the count to the warm-up threshold and the
 * one that brings it to the expected total stamp {@code System.nanoTime()}: the steady rate is
 * {@code (expected - warmUp) / (last - warm)} tuples/s.
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
    }

    /** A worker bolt finished one tuple. */
    static void tupleProcessed(int workerIndex) {
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
    }
}
