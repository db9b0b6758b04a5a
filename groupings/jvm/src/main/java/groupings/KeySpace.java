package groupings;

import java.util.ArrayList;
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
 */
public final class KeySpace {
    /** {@code lastCheck} of an item never checked: its first check is always due (§6.5). */
    public static final long NEVER = Long.MIN_VALUE;

    /** One reference {@code KeyItem} (§7.2); its task set and last-seen time are not kept (no rule reads them). */
    public static final class KeyItem {
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
    private final HashMap<String, KeyItem> old;
    private final HashMap<String, KeyItem> teen;
    private final HashMap<String, KeyItem> baby;

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
        old = new HashMap<>(oldMax);
        teen = new HashMap<>(teenMax);
        baby = new HashMap<>(babyMax);
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
            baby.put(key, new KeyItem(key));
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

    private static List<KeyItem> sortDesc(HashMap<String, KeyItem> map) {
        List<KeyItem> items = new ArrayList<>(map.values()); // HashMap iteration order
        items.sort(BY_COUNT_DESC); // stable: ties keep that order
        return items;
    }

    private static void refill(HashMap<String, KeyItem> map, List<KeyItem> items) {
        map.clear(); // keeps the table capacity, as in the reference
        for (KeyItem item : items) {
            map.put(item.key, item);
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

    private static List<Map.Entry<String, Long>> items(HashMap<String, KeyItem> map) {
        List<Map.Entry<String, Long>> out = new ArrayList<>(map.size());
        for (KeyItem item : map.values()) {
            out.add(Map.entry(item.key, item.count));
        }
        return out;
    }
}
