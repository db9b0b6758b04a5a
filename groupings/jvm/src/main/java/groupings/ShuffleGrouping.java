package groupings;

/**
 * SHUFFLE (reference {@code ShuffleGrouping}, §3, Q16): a deterministic round robin per instance,
 * starting at worker 0, ignoring key and time. Not Storm's randomised shuffle.
 */
public final class ShuffleGrouping extends ReferenceGrouping {
    private int counter = -1;

    public ShuffleGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
    }

    @Override
    protected int route(String key, long now) {
        counter = (counter + 1) % numWorkers;
        sent[counter]++;
        return counter;
    }

    @Override
    public String name() {
        return "SHUFFLE";
    }
}
