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

    /**
     * n becomes {@code workers}, in place, at a barrier between two tuples (the naive rescale
     * baseline, rescaling.md §3: hash mod the new n moves most keys), as {@code KeyGrouping.reschedule}
     * in groupings/key.py: the loads of the ids below both sizes are kept.
     *
     * @throws IllegalArgumentException {@code workers < 1}
     */
    public void rescale(int workers) {
        if (workers < 1) {
            throw new IllegalArgumentException("num_workers must be >= 1, got " + workers);
        }
        resize(workers);
    }

    @Override
    public String name() {
        return "KEY";
    }
}
