package bench.peers.kstreams;

import bench.peers.contract.PeerOutputs.TraceRow;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the instances report while they run, shared by all of them (one per run): the input records
 * read, the malformed ones, one trace row per processed tuple, and the largest Kafka timestamp
 * processed (the schedule's clock).
 *
 * <p>Exactly-once: Kafka Streams may process a record again after an aborted transaction (a
 * rebalance that fences a producer). These side effects are not transactional, so records are
 * identified by their input coordinates (partition, offset): a record read twice counts once, and a
 * tuple processed twice keeps the row of its last processing ({@link #reprocessed()} counts them).
 */
public final class Progress {
    private final Map<Long, Boolean> read = new ConcurrentHashMap<>();
    private final Map<Long, Boolean> malformed = new ConcurrentHashMap<>();
    private final Map<Long, TraceRow> trace = new ConcurrentHashMap<>();
    private final AtomicLong reprocessed = new AtomicLong();
    private final AtomicLong maxTsMs = new AtomicLong(Long.MIN_VALUE);
    private final long[] dueTsMs;
    private final AtomicLongArray dueWallMs;

    /** A progress without watched times. */
    public Progress() {
        this(new long[0]);
    }

    /**
     * @param dueTsMs Kafka timestamps (epoch ms) to watch: {@link #dueWallMs(int)} tells when a tuple
     *     with a timestamp at or past each was first processed (the schedule's due times)
     */
    public Progress(long[] dueTsMs) {
        this.dueTsMs = dueTsMs.clone();
        this.dueWallMs = new AtomicLongArray(dueTsMs.length);
    }

    /** Wall epoch ms when watched time {@code i} was first reached by a processed tuple; 0 before. */
    public long dueWallMs(int i) {
        return dueWallMs.get(i);
    }

    /** The identity of an input record: its partition (high bits) and offset. */
    public static long coordinates(int partition, long offset) {
        return ((long) partition << 40) | offset;
    }

    /** An input record at {@code coordinates} was read. */
    public void read(long coordinates) {
        read.put(coordinates, Boolean.TRUE);
    }

    /** The input record at {@code coordinates} is malformed (no tuple). */
    public void malformed(long coordinates) {
        malformed.put(coordinates, Boolean.TRUE);
    }

    /** The tuple of input record {@code coordinates} was processed, with Kafka timestamp {@code tsMs}. */
    public void processed(long coordinates, TraceRow row, long tsMs) {
        if (trace.put(coordinates, row) != null) {
            reprocessed.incrementAndGet();
        }
        maxTsMs.accumulateAndGet(tsMs, Math::max);
        for (int i = 0; i < dueTsMs.length; i++) {
            if (tsMs >= dueTsMs[i] && dueWallMs.get(i) == 0) {
                dueWallMs.compareAndSet(i, 0, row.processedMs());
            }
        }
    }

    /** Distinct input records read. */
    public long recordsRead() {
        return read.size();
    }

    /** Distinct malformed input records. */
    public long malformed() {
        return malformed.size();
    }

    /** Distinct tuples processed. */
    public long tuplesProcessed() {
        return trace.size();
    }

    /** Processings of a tuple already processed (exactly-once retries after an abort). */
    public long reprocessed() {
        return reprocessed.get();
    }

    /** The largest Kafka timestamp processed (epoch ms); Long.MIN_VALUE before any. */
    public long maxTsMs() {
        return maxTsMs.get();
    }

    /** The trace rows, one per distinct processed tuple (a live view). */
    public Iterable<TraceRow> trace() {
        return trace.values();
    }
}
