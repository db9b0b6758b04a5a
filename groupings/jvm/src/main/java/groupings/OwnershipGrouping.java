package groupings;

import java.util.Arrays;

/**
 * Groupings whose workers own groups of keys (key groups, vnodes), as {@code groupings/ownership.py}:
 * a key hashes to one of G fixed groups, and a table maps each group to the worker that owns it, so a
 * key's state moves only with its group.
 *
 * <p>The first table gives worker i the contiguous groups {@code g * n / G == i} (Flink's ranges,
 * and VNODE's first mapping). A rescale installs a new table with {@link #assign}: the table is
 * computed by the control plane ({@code OwnershipGrouping.reschedule} in Python: Flink's ranges for
 * KEY_GROUP, RisingWave's minimal move for VNODE), so each rescale decision has one implementation.
 * {@link #numWorkers} is the size of the worker-id space, the largest owner + 1.
 */
public abstract class OwnershipGrouping extends ReferenceGrouping {
    private static final long serialVersionUID = 1L;
    /** G, the number of groups (Flink's max parallelism, RisingWave's vnode count). */
    public final int groups;
    private int[] owners;

    /**
     * @throws IllegalArgumentException {@code numWorkers < 1}, or {@code groups} outside
     *     [numWorkers, maxGroups]
     */
    protected OwnershipGrouping(int numWorkers, long startMs, int groups, String groupsName, int maxGroups) {
        super(numWorkers, startMs);
        if (groups < numWorkers || groups > maxGroups) {
            throw new IllegalArgumentException(groupsName + " must be in [num_workers, " + maxGroups + "] = ["
                    + numWorkers + ", " + maxGroups + "], got " + groups);
        }
        this.groups = groups;
        this.owners = new int[groups];
        for (int g = 0; g < groups; g++) {
            owners[g] = (int) ((long) g * numWorkers / groups);
        }
    }

    /** The group of {@code key}, in [0, G). */
    public abstract int groupOf(String key);

    @Override
    protected final int route(String key, long now) {
        int task = owners[groupOf(key)];
        sent[task]++;
        return task;
    }

    /** The worker that owns {@code key} now; routes nothing. */
    public final int ownerOf(String key) {
        return owners[groupOf(key)];
    }

    /** The owner of every group (a copy, length G). */
    public final int[] assignment() {
        return owners.clone();
    }

    /**
     * Install a new owner table, at a barrier between two tuples; the worker-id space becomes
     * [0, largest owner + 1) ({@link #resize}).
     *
     * @param newOwners the owner (a worker id >= 0) of every group, length G
     * @return the groups whose owner changed, ascending
     * @throws IllegalArgumentException a table of another length or with a negative id; nothing
     *     changes then
     */
    public final int[] assign(int[] newOwners) {
        if (newOwners.length != groups) {
            throw new IllegalArgumentException(name() + " has " + groups + " groups, got an owner table of "
                    + newOwners.length);
        }
        int size = 0;
        for (int owner : newOwners) {
            if (owner < 0) {
                throw new IllegalArgumentException("worker ids must be >= 0, got " + owner);
            }
            size = Math.max(size, owner + 1);
        }
        int[] moved = new int[groups];
        int count = 0;
        for (int g = 0; g < groups; g++) {
            if (newOwners[g] != owners[g]) {
                moved[count++] = g;
            }
        }
        owners = newOwners.clone();
        if (size != numWorkers) {
            resize(size);
        }
        return Arrays.copyOf(moved, count);
    }
}
