package bench.topology;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.DataFormatException;
import groupings.PacedCost;
import org.HdrHistogram.Histogram;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.expressions.Aggregator;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.util.TaskCompletionListener;
import scala.Tuple3;

/**
 * Storm's WorkerBolt in the worker task (bench/topology/worker.py places the tuples: one Spark task
 * per worker): its simulated cost and each tuple's processing latency, with no tuple leaving the JVM.
 *
 * <p>{@link #processedAtUs} is the work: per tuple, in the task's order, the reference's speed rule
 * ({@code k += 1; if k >= every: sleep(cost); k = 0}, dkg-reference.md, WorkerBolt), then the moment
 * the tuple was done (epoch µs). The sleeps are paced against the task's clock ({@link PacedCost},
 * which the Storm peer's worker bolt pays its cost with too): a sleep's overshoot is taken off the
 * next, so a worker's busy time is its number of sleeps times the cost.
 *
 * <p>{@link #latencies} is an aggregate for the stage's observed metrics: per worker, the tuples'
 * processing latencies (done minus the Kafka timestamp, µs) in an HdrHistogram with the range and
 * precision of bench/latency.py, and the first and last moment a tuple was done, as lines of
 * {@code <worker>|<first ms>|<last ms>|<histogram>} (HdrHistogram's compressed base64 form, which
 * the Python {@code hdrh} package decodes).
 */
public final class WorkerTask {
    static final long LOWEST_US = 1;
    static final long HIGHEST_US = 24L * 3600 * 1_000_000;
    static final int SIGNIFICANT_DIGITS = 3;

    private WorkerTask() {}

    /**
     * The worker's work, one call per tuple: a non-deterministic column of the epoch µs at which the
     * tuple was done (so the optimizer neither drops nor repeats it).
     *
     * @param costMs the simulated cost of one sleep, ms (0: no sleep, the latency is still measured)
     * @param costEvery one sleep per this many tuples (the reference's K)
     * @throws IllegalArgumentException for a negative cost or {@code costEvery} below 1
     */
    public static Column processedAtUs(double costMs, int costEvery) {
        if (costMs < 0 || costEvery < 1) {
            throw new IllegalArgumentException("cost must be >= 0 ms and cost-every >= 1, got " + costMs + ", "
                    + costEvery);
        }
        return functions.udf(new Work(costMs, costEvery), DataTypes.LongType)
                .asNondeterministic().apply();
    }

    /**
     * The per-worker latency lines of the tuples aggregated, one string (lines joined by {@code \n},
     * NULL for no tuple).
     *
     * @param worker the tuple's worker (int)
     * @param eventMs its Kafka timestamp, epoch ms (long)
     * @param doneUs {@link #processedAtUs}
     */
    public static Column latencies(Column worker, Column eventMs, Column doneUs) {
        return functions.udaf(new Latencies(), Encoders.tuple(Encoders.INT(), Encoders.LONG(), Encoders.LONG()))
                .apply(worker, eventMs, doneUs);
    }

    static long nowUs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
    }

    static final class Work implements UDF0<Long> {
        private static final long serialVersionUID = 1L;
        /** Per running task attempt; removed when the task completes. */
        private static final Map<Long, PacedCost> PACES = new ConcurrentHashMap<>();
        private final double costMs;
        private final int every;

        Work(double costMs, int every) {
            this.costMs = costMs;
            this.every = every;
        }

        @Override
        public Long call() {
            if (costMs > 0) {
                pace().pay();
            }
            return nowUs();
        }

        private PacedCost pace() {
            TaskContext task = TaskContext.get();
            long attempt = task == null ? -1 : task.taskAttemptId();
            PacedCost pace = PACES.get(attempt);
            if (pace == null) {
                pace = new PacedCost(costMs, every);
                PACES.put(attempt, pace);
                if (task != null) {
                    task.addTaskCompletionListener((TaskCompletionListener) done -> PACES.remove(attempt));
                }
            }
            return pace;
        }
    }

    /** One worker's latencies in a task: an HdrHistogram and the first and last tuple done (epoch µs). */
    public static final class WorkerLatency implements Serializable {
        private static final long serialVersionUID = 1L;
        transient Histogram histogram = newHistogram();
        long firstUs = Long.MAX_VALUE;
        long lastUs = Long.MIN_VALUE;

        void add(long eventMs, long doneUs) {
            histogram.recordValue(Math.min(Math.max(doneUs - 1_000 * eventMs, LOWEST_US), HIGHEST_US));
            firstUs = Math.min(firstUs, doneUs);
            lastUs = Math.max(lastUs, doneUs);
        }

        void merge(WorkerLatency other) {
            histogram.add(other.histogram);
            firstUs = Math.min(firstUs, other.firstUs);
            lastUs = Math.max(lastUs, other.lastUs);
        }

        byte[] compressed() {
            ByteBuffer buffer = ByteBuffer.allocate(histogram.getNeededByteBufferCapacity());
            int length = histogram.encodeIntoCompressedByteBuffer(buffer);
            byte[] bytes = new byte[length];
            buffer.rewind();
            buffer.get(bytes);
            return bytes;
        }

        /** Serialized compressed (a few hundred bytes), not as the counts array (about 220 KB). */
        private void writeObject(ObjectOutputStream out) throws IOException {
            out.defaultWriteObject();
            byte[] bytes = compressed();
            out.writeInt(bytes.length);
            out.write(bytes);
        }

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            in.defaultReadObject();
            byte[] bytes = new byte[in.readInt()];
            in.readFully(bytes);
            try {
                histogram = Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(bytes), LOWEST_US);
            } catch (DataFormatException e) {
                throw new IOException(e);
            }
        }

        static Histogram newHistogram() {
            return new Histogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS);
        }
    }

    /** The aggregation buffer: worker id -> its latencies, in worker order. */
    public static final class ByWorker implements Serializable {
        private static final long serialVersionUID = 1L;
        final TreeMap<Integer, WorkerLatency> workers = new TreeMap<>();
    }

    static final class Latencies extends Aggregator<Tuple3<Integer, Long, Long>, ByWorker, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public ByWorker zero() {
            return new ByWorker();
        }

        @Override
        public ByWorker reduce(ByWorker buffer, Tuple3<Integer, Long, Long> tuple) {
            buffer.workers.computeIfAbsent(tuple._1(), w -> new WorkerLatency()).add(tuple._2(), tuple._3());
            return buffer;
        }

        @Override
        public ByWorker merge(ByWorker left, ByWorker right) {
            right.workers.forEach((w, latency) -> left.workers.merge(w, latency, (a, b) -> {
                a.merge(b);
                return a;
            }));
            return left;
        }

        @Override
        public String finish(ByWorker buffer) {
            if (buffer.workers.isEmpty()) {
                return null;
            }
            StringJoiner lines = new StringJoiner("\n");
            buffer.workers.forEach((w, latency) -> lines.add(w + "|" + latency.firstUs / 1_000 + "|"
                    + latency.lastUs / 1_000 + "|" + Base64.getEncoder().encodeToString(latency.compressed())));
            return lines.toString();
        }

        @Override
        public Encoder<ByWorker> bufferEncoder() {
            return Encoders.javaSerialization(ByWorker.class);
        }

        @Override
        public Encoder<String> outputEncoder() {
            return Encoders.STRING();
        }
    }
}
