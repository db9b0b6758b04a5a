package groupings;

import java.io.Serializable;
import java.util.Arrays;

/**
 * One instance of a reference grouping (§1): routes a tuple {@code (key, nowMs)} to a worker index
 * in [0, n) and updates its own state. No Storm, no Spark, no Kafka: the Storm peer's adapter is
 * {@code bench.peers.storm.topology.ReferenceStreamGrouping}. One splitter task owns one instance,
 * as in the reference topology (Q18).
 *
 * <p>Time is injected, never read from a clock. As in the harness ({@code groupings/base.py}), a
 * {@code nowMs} earlier than the latest seen (or than {@code startMs}) is clamped to it.
 *
 * <p>Serializable, as the Python stage pickles its instance, so that a JVM stage can keep one in
 * Spark's state store between micro-batches (bench/topology/jvm's GroupingStage does): a restored
 * instance routes on exactly as the saved one would (SerializationTest).
 */
public abstract class ReferenceGrouping implements Serializable {
    private static final long serialVersionUID = 1L;
    /** n, the size of the worker-id space (an {@link OwnershipGrouping}'s changes with {@link #resize}). */
    protected int numWorkers;
    protected final long startMs;
    /** Tuples this instance has sent to each worker, length {@link #numWorkers}. */
    protected long[] sent;
    private long lastNow;

    protected ReferenceGrouping(int numWorkers, long startMs) {
        if (numWorkers < 1) {
            throw new IllegalArgumentException("num_workers must be >= 1, got " + numWorkers);
        }
        this.numWorkers = numWorkers;
        this.startMs = startMs;
        this.sent = new long[numWorkers];
        this.lastNow = startMs;
    }

    /**
     * Route one tuple.
     *
     * @param key the tuple's key, not null
     * @param nowMs the tuple's time in ms (the Kafka timestamp in the peer), clamped to the latest seen
     * @return the worker index in [0, n)
     */
    public final int choose(String key, long nowMs) {
        if (key == null) {
            throw new NullPointerException("a tuple's key must not be null");
        }
        long now = Math.max(nowMs, lastNow);
        int task = route(key, now);
        lastNow = now;
        return task;
    }

    /** The reference rule for one tuple, {@code now} clamped; updates {@link #sent}. */
    protected abstract int route(String key, long now);

    /** The strategy's name, e.g. {@code DYNAMIC_KEY}. */
    public abstract String name();

    public final int numWorkers() {
        return numWorkers;
    }

    /**
     * The worker-id space becomes [0, n): the loads of the ids below both sizes are kept, a new id
     * starts at 0, as {@code groupings/ownership.py} does after a reschedule.
     */
    protected final void resize(int n) {
        sent = Arrays.copyOf(sent, n);
        numWorkers = n;
    }

    /** Tuples this instance has sent to each worker (a copy). */
    public final long[] loads() {
        return Arrays.copyOf(sent, sent.length);
    }
}
