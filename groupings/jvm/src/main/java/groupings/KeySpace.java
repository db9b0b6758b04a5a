package groupings;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * DYNAMIC_KEY's generational KeySpace (reference {@code KeySpace}, {@code KeyItem}; §7): three
 * {@code java.util.HashMap}s, old, teen and baby, created with the generations' sizes as initial
 * capacities, so that their iteration order, which breaks the ties of the stable sorts (§7.4, Q9),
 * is the reference's own. The cycles are called by {@link DynamicKeyGrouping} on its injected clock
 * (§8); there is no manager thread.
 *
 * <p>Serializable (a JVM stage can keep its grouping in Spark's state store between micro-batches): a
 * restored KeySpace iterates, and so breaks ties, exactly as the one that was saved ({@link Generation}).
 */
public final class KeySpace implements Serializable {
    private static final long serialVersionUID = 1L;

    /** {@code lastCheck} of an item never checked: its first check is always due (§6.5). */
    public static final long NEVER = Long.MIN_VALUE;

    /** One reference {@code KeyItem} (§7.2); its task set and last-seen time are not kept (no rule reads them). */
    public static final class KeyItem implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String key;
        /** Tuples recorded since the item was created, starting at 1. */
        public long count = 1;
        /** ms of the last scaling check, {@link #NEVER} before the first. */
        public long lastCheck = NEVER;

        KeyItem(String key) {
            this.key = key;
        }
    }

    /** Count descending; stable in {@code List.sort}. The reference subtracts and casts (Q15): equal below 2^31. */
    private static final Comparator<KeyItem> BY_COUNT_DESC = (a, b) -> Long.compare(b.count, a.count);

    public final int oldMax;
    public final int teenMax;
    public final int babyMax;
    private final Generation old;
    private final Generation teen;
    private final Generation baby;

    /**
     * One generation: a {@code HashMap} of items by key, and the size its table has grown to. The
     * table never shrinks ({@code clear()} keeps it, as in the reference), and its size fixes the
     * iteration order. Java's own serialization of a HashMap rebuilds a table sized for the entries it
     * holds, which reorders them; a Generation is saved as (table size, items in iteration order) and
     * rebuilt into a table of that size in that order, so each bucket holds the same items in the same
     * order. (A bucket of 8 or more colliding keys, which HashMap turns into a tree, is not kept in
     * its order: at a load of at most 0.75 that is about one bucket in a million.)
     */
    private static final class Generation implements Serializable {
        private static final long serialVersionUID = 1L;
        private static final float LOAD_FACTOR = 0.75f; // HashMap's default
        private transient HashMap<String, KeyItem> items;
        /** The map's table size: HashMap's rounding of the initial capacity, doubled as the map grows. */
        private int tableSize;

        Generation(int initialCapacity) {
            items = new HashMap<>(initialCapacity);
            tableSize = Integer.highestOneBit(Math.max(1, initialCapacity) * 2 - 1); // HashMap's tableSizeFor
        }

        KeyItem get(String key) {
            return items.get(key);
        }

        boolean containsKey(String key) {
            return items.containsKey(key);
        }

        void put(KeyItem item) {
            items.put(item.key, item);
            while (items.size() > (int) (tableSize * LOAD_FACTOR)) { // HashMap's resize rule
                tableSize *= 2;
            }
        }

        Collection<KeyItem> values() {
            return items.values();
        }

        void clear() {
            items.clear();
        }

        /** Each item as its three fields, not as an object: a grouping stage in Real-Time Mode saves
         * its instance after every tuple, and {@code writeObject} per item made DYNAMIC_KEY's save of
         * 204 keys about ten times slower (bench/topology/jvm, GroupingStage). A key is written as
         * modified UTF-8 in chunks, so a key of any length round-trips. */
        private void writeObject(ObjectOutputStream out) throws IOException {
            out.defaultWriteObject();
            out.writeInt(items.size());
            for (KeyItem item : items.values()) {
                writeKey(out, item.key);
                out.writeLong(item.count);
                out.writeLong(item.lastCheck);
            }
        }

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            in.defaultReadObject();
            int size = in.readInt();
            items = new HashMap<>(tableSize);
            for (int i = 0; i < size; i++) {
                KeyItem item = new KeyItem(readKey(in));
                item.count = in.readLong();
                item.lastCheck = in.readLong();
                items.put(item.key, item);
            }
        }

        /** {@code writeUTF} takes at most 65,535 bytes: a key is written as a chunk count and chunks. */
        private static void writeKey(ObjectOutputStream out, String key) throws IOException {
            int chunks = (key.length() + KEY_CHUNK - 1) / KEY_CHUNK;
            out.writeInt(chunks);
            for (int c = 0; c < chunks; c++) {
                out.writeUTF(key.substring(c * KEY_CHUNK, Math.min(key.length(), (c + 1) * KEY_CHUNK)));
            }
        }

        private static String readKey(ObjectInputStream in) throws IOException {
            int chunks = in.readInt();
            if (chunks == 1) {
                return in.readUTF();
            }
            StringBuilder key = new StringBuilder();
            for (int c = 0; c < chunks; c++) {
                key.append(in.readUTF());
            }
            return key.toString();
        }

        /** Characters per {@code writeUTF} chunk: at most 3 bytes each in modified UTF-8, under 65,535. */
        private static final int KEY_CHUNK = 21_000;
    }

    /**
     * @param distinctKeyCount d: the generations hold {@code int(d*0.1)}, {@code int(d*0.4)} and
     *     {@code int(d*0.5)} keys, computed in binary64 as the reference does (§7.1)
     */
    public KeySpace(int distinctKeyCount) {
        if (distinctKeyCount < 0) {
            throw new IllegalArgumentException("distinct_key_count must be >= 0, got " + distinctKeyCount);
        }
        oldMax = (int) (distinctKeyCount * (10 / 100.0));
        teenMax = (int) (distinctKeyCount * (40 / 100.0));
        babyMax = (int) (distinctKeyCount * (50 / 100.0));
        old = new Generation(oldMax);
        teen = new Generation(teenMax);
        baby = new Generation(babyMax);
    }

    /** The key's item, looked up in old, then teen, then baby; null if none (§7.3). */
    public KeyItem find(String key) {
        KeyItem item = old.get(key);
        if (item == null) {
            item = teen.get(key);
        }
        if (item == null) {
            item = baby.get(key);
        }
        return item;
    }

    /** Whether the key's item is in old space: the scale-up gate (§6.4, Q4). */
    public boolean inOld(String key) {
        return old.containsKey(key);
    }

    /** Count one tuple of {@code key}: {@code count += 1} where the item lives, or a new baby item (§7.3). */
    public void record(String key) {
        KeyItem item = find(key);
        if (item != null) {
            item.count++;
        } else {
            baby.put(new KeyItem(key));
        }
    }

    /** Cycle baby→teen ({@code promoteToTeenageSpace}, §7.7): baby keys ranked below BABY are dropped (Q7). */
    public void promoteToTeenageSpace() {
        List<KeyItem> babies = sortDesc(baby);
        if (babies.size() > babyMax) {
            babies = new ArrayList<>(babies.subList(0, babyMax));
        }
        List<KeyItem> teens = sortDesc(teen);
        promote(babies, teens, teenMax);
        refill(baby, babies);
        refill(teen, teens);
    }

    /** Cycle teen→old ({@code promoteToOldSpace}, §7.8): old re-sorted afterwards, teen not. */
    public void promoteToOldSpace() {
        List<KeyItem> teens = sortDesc(teen);
        List<KeyItem> olds = sortDesc(old);
        promote(teens, olds, oldMax);
        olds.sort(BY_COUNT_DESC); // a side effect of the reference's logging
        refill(teen, teens);
        refill(old, olds);
    }

    /** Reference promotion between two sorted generations, in place (§7.6, Q8). */
    static void promote(List<KeyItem> from, List<KeyItem> to, int toMax) {
        int moved = 0;
        while (to.size() < toMax) { // phase 1: fill free slots, inserting at the FRONT
            if (from.isEmpty()) {
                return;
            }
            to.add(0, from.remove(0));
            moved++;
        }
        while (moved < toMax) { // phase 2: the counter continues from phase 1
            if (from.isEmpty()) {
                return;
            }
            // Strict, and against the LAST element of `to`, which is not always its minimum.
            if (from.get(0).count > to.get(to.size() - 1).count) {
                KeyItem x = from.remove(0);
                KeyItem y = to.remove(to.size() - 1);
                to.add(0, x);
                from.add(y); // the displaced item goes to the END of the from-list
            } else {
                break;
            }
            moved++;
        }
    }

    private static List<KeyItem> sortDesc(Generation map) {
        List<KeyItem> items = new ArrayList<>(map.values()); // HashMap iteration order
        items.sort(BY_COUNT_DESC); // stable: ties keep that order
        return items;
    }

    private static void refill(Generation map, List<KeyItem> items) {
        map.clear(); // keeps the table capacity, as in the reference
        for (KeyItem item : items) {
            map.put(item);
        }
    }

    /** Old space's keys with their counts, in HashMap iteration order (for tests and logs). */
    public List<Map.Entry<String, Long>> oldItems() {
        return items(old);
    }

    /** Teen space's keys with their counts, in HashMap iteration order. */
    public List<Map.Entry<String, Long>> teenItems() {
        return items(teen);
    }

    /** Baby space's keys with their counts, in HashMap iteration order. */
    public List<Map.Entry<String, Long>> babyItems() {
        return items(baby);
    }

    private static List<Map.Entry<String, Long>> items(Generation map) {
        List<Map.Entry<String, Long>> out = new ArrayList<>(map.values().size());
        for (KeyItem item : map.values()) {
            out.add(Map.entry(item.key, item.count));
        }
        return out;
    }
}
