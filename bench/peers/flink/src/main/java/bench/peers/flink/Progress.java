package bench.peers.flink;

import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the job's tasks report to the driver. The MiniCluster runs every task in this JVM, so static
 * fields are shared by the operators and the driver (a cluster of several processes would need
 * accumulators or a side output instead). Counts span every job of the run (the job restored from a
 * savepoint goes on counting): they count what was done, not what the state holds.
 */
public final class Progress {
    /** One processed tuple: a trace.csv row (release_ms -1 = unknown, times epoch ms). */
    public record TraceRow(String key, int unit, int worker, long releaseMs, long processedMs) {}

    /** Records deserialized by the Kafka source. */
    public static final AtomicLong READ = new AtomicLong();
    /** Records parsed as malformed (no tuple). */
    public static final AtomicLong MALFORMED = new AtomicLong();
    /** Tuples processed by the workers. */
    public static final AtomicLong PROCESSED = new AtomicLong();
    /** Largest Kafka timestamp among the processed tuples, epoch ms (the schedule's clock). */
    public static final AtomicLong MAX_TS_MS = new AtomicLong(Long.MIN_VALUE);
    /** Every processed tuple, in processing order per worker. */
    public static final Queue<TraceRow> TRACE = new ConcurrentLinkedQueue<>();
    /** Keys seen by the workers so far. */
    public static final Set<String> KEYS = ConcurrentHashMap.newKeySet();
    /** Per job generation (0 = the first job, i = after the i-th restore): wall ms of its first tuple. */
    public static final Map<Integer, Long> FIRST_TUPLE_MS = new ConcurrentHashMap<>();

    private Progress() {}

    /** Clears everything (a new run, a new test). */
    public static void reset() {
        READ.set(0);
        MALFORMED.set(0);
        PROCESSED.set(0);
        MAX_TS_MS.set(Long.MIN_VALUE);
        TRACE.clear();
        KEYS.clear();
        FIRST_TUPLE_MS.clear();
    }

    /** A worker processed a tuple of {@code key}, Kafka time {@code tsMs}; the trace row first, then the count. */
    static void processed(TraceRow row, long tsMs) {
        TRACE.add(row);
        KEYS.add(row.key());
        MAX_TS_MS.accumulateAndGet(tsMs, Math::max);
        PROCESSED.incrementAndGet();
    }
}
