package groupings;

/**
 * PARTIAL_KEY (reference {@code PartialKeyGrouping}, Storm 1.x PKG without fields, §5): two choices
 * {@code index(13, key, n)} and {@code index(17, key, n)}; the second wins only when this instance
 * has sent strictly more tuples to the first (ties and equal choices go to the first). Storm 2.x's
 * own PartialKeyGrouping (random choices seeded by the key bytes) is not equivalent.
 */
public final class PartialKeyGrouping extends ReferenceGrouping {
    public PartialKeyGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
    }

    @Override
    protected int route(String key, long now) {
        int first = Hashing.index(Hashing.KEY_SEED, key, numWorkers);
        int second = Hashing.index(Hashing.SECOND_SEED, key, numWorkers);
        int task = sent[first] > sent[second] ? second : first;
        sent[task]++;
        return task;
    }

    @Override
    public String name() {
        return "PARTIAL_KEY";
    }
}
