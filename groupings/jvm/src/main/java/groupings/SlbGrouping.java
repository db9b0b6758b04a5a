package groupings;

import com.clearspring.analytics.stream.Counter;
import com.clearspring.analytics.stream.StreamSummary;
import java.util.List;

/**
 * What D_CHOICES and W_CHOICES share (groupings/slb.py; dkg-reference.md Appendix A; Nasir et al.,
 * "When Two Choices Are not Enough", ICDE 2016), as the authors' SLBStorm code does it, with their
 * own library: each instance offers every key to its stream-lib {@link StreamSummary} of capacity
 * 100 and counts its messages m; a key is in the head when {@code ((float) count + (float) error) / m
 * > 2 / (float) (n * T)} (T = 10) and then goes to the least loaded of its head candidates; a tail
 * key goes by PARTIAL_KEY's rule (seeds 13 and 17). "Least loaded" is this instance's count of
 * tuples sent, the first candidate winning ties ({@code selectMinChoice}).
 *
 * <p>The two departures from SLBStorm are groupings/slb.py's: m is counted (SLBStorm's stays 0) and
 * D-Choices' d starts at least at 1. Checked tuple by tuple against the authors' code
 * (tests/groupings/slb_oracle, SlbGoldenTest). The summary is {@link java.io.Externalizable}, so a
 * saved instance routes on as the original (SerializationTest).
 */
abstract class SlbGrouping extends ReferenceGrouping {
    private static final long serialVersionUID = 1L;
    static final int CAPACITY = 100;
    static final int T = 10;
    /** theta, Java float as SLBSimulator's {@code Choice/(float)(serversNo*threshold)}. */
    protected final float theta;
    private final StreamSummary<String> summary = new StreamSummary<>(CAPACITY);
    private long messages;

    SlbGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
        theta = 2 / (float) (numWorkers * T);
    }

    @Override
    protected final int route(String key, long now) {
        messages++;
        summary.offer(key);
        List<Counter<String>> counters = counters();
        int task;
        if (probability(counterOf(key, counters)) > theta) {
            task = leastLoaded(headCandidates(key, counters));
        } else {
            int first = Hashing.index(Hashing.KEY_SEED, key, numWorkers);
            int second = Hashing.index(Hashing.SECOND_SEED, key, numWorkers);
            task = sent[first] > sent[second] ? second : first;
        }
        sent[task]++;
        return task;
    }

    /**
     * The candidates of a head key, in the order whose first wins a tie.
     *
     * @param counters the summary's counters in stream-lib's topK order (the first is topK(1)'s)
     */
    protected abstract int[] headCandidates(String key, List<Counter<String>> counters);

    /** SLB's frequency estimate of a monitored key: {@code ((float) count + (float) error) / m}. */
    protected final float probability(Counter<String> counter) {
        return ((float) counter.getCount() + (float) counter.getError()) / messages;
    }

    /** The summary's counters in stream-lib's topK order, listed once per tuple. */
    final List<Counter<String>> counters() {
        return summary.topK(CAPACITY);
    }

    /** The counter of {@code key} among {@code counters}: the key was just offered, so it is monitored. */
    private static Counter<String> counterOf(String key, List<Counter<String>> counters) {
        for (Counter<String> counter : counters) {
            if (counter.getItem().equals(key)) {
                return counter;
            }
        }
        throw new IllegalStateException("the key just offered is not in the summary: " + key);
    }

    private int leastLoaded(int[] candidates) {
        int best = candidates[0];
        for (int c : candidates) {
            if (sent[c] < sent[best]) {
                best = c;
            }
        }
        return best;
    }

    /** Every worker, in order: W-Choices' candidates, and D-Choices' when d >= n. */
    protected final int[] everyWorker() {
        int[] all = new int[numWorkers];
        for (int w = 0; w < numWorkers; w++) {
            all[w] = w;
        }
        return all;
    }
}
