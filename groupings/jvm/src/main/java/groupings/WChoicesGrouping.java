package groupings;

import com.clearspring.analytics.stream.Counter;
import java.util.List;

/**
 * W_CHOICES (groupings/slb.py {@code WChoicesGrouping}; SLBStorm {@code WChoiceGrouping}): a head
 * key goes to the least loaded of all workers; the tail by PARTIAL_KEY's rule ({@link SlbGrouping}).
 */
public final class WChoicesGrouping extends SlbGrouping {
    private static final long serialVersionUID = 1L;

    public WChoicesGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
    }

    @Override
    protected int[] headCandidates(String key, List<Counter<String>> counters) {
        return everyWorker();
    }

    @Override
    public String name() {
        return "W_CHOICES";
    }
}
