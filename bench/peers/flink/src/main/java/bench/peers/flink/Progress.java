package bench.peers.flink;

import bench.peers.contract.PeerOutputs.TraceRow;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the job's tasks report to the driver. The MiniCluster runs every task in this JVM, so static
 * fields are shared by the operators and the driver (a cluster of several processes would need
 * accumulators or a side output instead). They span every job and every restart of the run.
 *
 * <p>Records are counted by their id ({@link Records.Raw#id}: partition and offset), so that a record
 * read and processed again after a restart from a checkpoint (the adaptive scheduler's rescale,
 * which replays the input after the checkpoint) counts once; the counters of every read and every
 * processing say how much was replayed. The trace keeps each record's last processing: the one whose
 * effect is in the state the run ends with.
 */
public final class Progress {

    /** The ids of the records deserialized by the Kafka source. */
    public static final Set<Long> READ = ConcurrentHashMap.newKeySet();
    /** Every deserialization, a record read again after a restart included. */
    public static final AtomicLong READS = new AtomicLong();
    /** The ids of the records parsed as malformed (no tuple). */
    public static final Set<Long> MALFORMED = ConcurrentHashMap.newKeySet();
    /** Per record id, its tuple's last processing. */
    public static final Map<Long, TraceRow> TRACE = new ConcurrentHashMap<>();
    /** Every processing, a tuple processed again after a restart included. */
    public static final AtomicLong PROCESSINGS = new AtomicLong();
    /** Largest Kafka timestamp among the processed tuples, epoch ms (the schedule's clock). */
    public static final AtomicLong MAX_TS_MS = new AtomicLong(Long.MIN_VALUE);
    /** Keys seen by the workers so far. */
    public static final Set<String> KEYS = ConcurrentHashMap.newKeySet();
    /**
     * The run's generation: 0 for the first job, +1 per rescale (set by the driver before it rescales;
     * a worker task takes it when it opens, so the tasks of a restored or restarted job have the new one).
     */
    public static final AtomicInteger GENERATION = new AtomicInteger();
    /** Per generation, wall ms of the first tuple a worker of it processed. */
    public static final Map<Integer, Long> FIRST_TUPLE_MS = new ConcurrentHashMap<>();

    private Progress() {}

    /** Clears everything (a new run, a new test). */
    public static void reset() {
        READ.clear();
        READS.set(0);
        MALFORMED.clear();
        TRACE.clear();
        PROCESSINGS.set(0);
        MAX_TS_MS.set(Long.MIN_VALUE);
        KEYS.clear();
        GENERATION.set(0);
        FIRST_TUPLE_MS.clear();
    }

    /** Records read, each once. */
    public static long read() {
        return READ.size();
    }

    /** Tuples processed, each once. */
    public static long processed() {
        return TRACE.size();
    }

    /** Records parsed as malformed, each once. */
    public static long malformed() {
        return MALFORMED.size();
    }

    /** The source read record {@code id}. */
    static void read(long id) {
        READS.incrementAndGet();
        READ.add(id);
    }

    /** Record {@code id} was malformed. */
    static void malformed(long id) {
        MALFORMED.add(id);
    }

    /** A worker processed the tuple of record {@code id}, Kafka time {@code tsMs}; the trace row first, then the counts. */
    static void processed(long id, TraceRow row, long tsMs) {
        TRACE.put(id, row);
        KEYS.add(row.key());
        MAX_TS_MS.accumulateAndGet(tsMs, Math::max);
        PROCESSINGS.incrementAndGet();
    }

    /** A one-line account of the counts, for a timeout's message. */
    static String summary(long records) {
        return "read " + read() + " of " + records + " records, processed " + processed() + " tuples, "
                + malformed() + " malformed";
    }
}
