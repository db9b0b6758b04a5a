package groupings;

import java.util.concurrent.locks.LockSupport;

/**
 * A worker's simulated cost per tuple, the reference's speed rule ({@code k += 1; if k >= every:
 * sleep(cost); k = 0}, dkg-reference WorkerBolt), with its sleeps paced against the worker's clock:
 * a sleep that overshoots (a timer's slack, tens of µs) is taken off the next one, so a worker's
 * busy time is its number of sleeps times the cost, as the reference's rate bound {@code 1000 / cost}
 * tuples/s assumes, and never less (time spent waiting for a tuple does not count as work).
 *
 * <p>One instance per worker (a Spark task of the harness's worker stage, bench/topology/jvm
 * {@code WorkerTask}; an executor's worker bolt task of the Storm peer, {@code WorkerBolt}): both
 * systems pay the same cost the same way. Not thread-safe.
 */
public final class PacedCost {
    private final long costNs;
    private final int every;
    private int sinceSleep;
    /** Sleep owed to the next sleep, ns: below 0, the credit of the last sleep's overshoot. */
    private long owedNs;

    /**
     * @param costMs the cost of one sleep, ms (0: no sleep)
     * @param every one sleep per this many tuples (the reference's K)
     * @throws IllegalArgumentException for a negative cost or {@code every} below 1
     */
    public PacedCost(double costMs, int every) {
        if (costMs < 0 || every < 1) {
            throw new IllegalArgumentException("cost must be >= 0 ms and every >= 1, got " + costMs + ", " + every);
        }
        this.costNs = Math.round(costMs * 1_000_000);
        this.every = every;
    }

    /** Pay one tuple's cost: every {@code every}-th tuple, sleep the cost plus what the last sleep owed. */
    public void pay() {
        if (costNs == 0 || ++sinceSleep < every) {
            return;
        }
        sinceSleep = 0;
        owedNs += costNs;
        long deadline = System.nanoTime() + owedNs;
        long now = System.nanoTime();
        while (now < deadline) {
            LockSupport.parkNanos(deadline - now);
            now = System.nanoTime();
        }
        owedNs = deadline - now;
    }
}
