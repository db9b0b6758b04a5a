package bench.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** One routed batch's figures (grouping_stage.py's {@code routing_summary}). */
final class RoutingSummary {
    /** Python's order of str: by code point (String.compareTo orders UTF-16 units). */
    private static final Comparator<String> CODE_POINT_ORDER = (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Boolean.compare(i < a.length(), j < b.length());
    };
    private final long[] loads;
    private final long[] tuples;
    private final List<Set<String>> keysOf;
    private Map<Long, Long> released = Map.of();

    RoutingSummary(int workers) {
        loads = new long[workers];
        tuples = new long[workers];
        keysOf = new ArrayList<>(workers);
        for (int w = 0; w < workers; w++) {
            keysOf.add(new HashSet<>());
        }
    }

    void add(int worker, String key, long count) {
        loads[worker] += count;
        tuples[worker] += 1;
        keysOf.get(worker).add(key);
    }

    /** HANDOFF's kept tuples sent in this batch: hold batch -> tuples, ascending. */
    void released(Map<Long, Long> heldIn) {
        released = heldIn;
    }

    /** The figures as JSON; the pairs sorted by (worker, key), once per batch; with {@code
     * released}, {@code [[hold batch, tuples], ...]}, when the batch sends kept tuples. */
    String json() {
        List<Object[]> pairs = new ArrayList<>();
        for (int w = 0; w < keysOf.size(); w++) {
            List<String> keys = new ArrayList<>(keysOf.get(w));
            keys.sort(CODE_POINT_ORDER);
            for (String key : keys) {
                pairs.add(new Object[] {w, key});
            }
        }
        Map<String, Object> figures = new LinkedHashMap<>();
        figures.put("loads", loads);
        figures.put("tuples", tuples);
        figures.put("pairs", pairs);
        if (!released.isEmpty()) {
            figures.put("released", released.entrySet().stream().map(e -> new long[] {e.getKey(), e.getValue()})
                    .toList());
        }
        try {
            return GroupingStage.JSON.writeValueAsString(figures);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
