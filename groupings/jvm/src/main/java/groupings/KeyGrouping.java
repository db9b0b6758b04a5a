package groupings;

/**
 * KEY (reference {@code KeyGrouping}, §4, Q17): {@code index(13, key, n)}, stateless. Not Storm's
 * {@code fieldsGrouping} ({@code List.hashCode mod n}).
 */
public final class KeyGrouping extends ReferenceGrouping {
    public KeyGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
    }

    @Override
    protected int route(String key, long now) {
        int task = Hashing.index(Hashing.KEY_SEED, key, numWorkers);
        sent[task]++;
        return task;
    }

    @Override
    public String name() {
        return "KEY";
    }
}
