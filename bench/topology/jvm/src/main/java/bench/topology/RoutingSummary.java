package bench.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * One routed batch's figures (grouping_stage.py's {@code routing_summary}), as JSON under the keys of
 * {@value #KEYS_RESOURCE}, the one source of them that bench/stack/resources.py reads too.
 */
public final class RoutingSummary {
    /** The resource that names the summary's JSON key of each field. */
    public static final String KEYS_RESOURCE = "/bench/topology/routing-summary.properties";

    /** The fields of a summary, each named once in {@link #KEYS_RESOURCE}. */
    public static final List<String> FIELDS = List.of("loads", "tuples", "pairs", "released");

    /** Field -> JSON key, as shipped. */
    public static final Map<String, String> KEYS = shippedKeys();
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
        figures.put(KEYS.get("loads"), loads);
        figures.put(KEYS.get("tuples"), tuples);
        figures.put(KEYS.get("pairs"), pairs);
        if (!released.isEmpty()) {
            figures.put(KEYS.get("released"),
                    released.entrySet().stream().map(e -> new long[] {e.getKey(), e.getValue()}).toList());
        }
        try {
            return GroupingStage.JSON.writeValueAsString(figures);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@link #KEYS_RESOURCE}'s text read: field -> JSON key, in {@link #FIELDS}' order (bench/stack/resources.py
     * {@code routing_summary_keys} reads it the same way: spaces around names and keys dropped).
     *
     * @throws IllegalArgumentException for a field missing or unknown, or two fields with one key
     */
    public static Map<String, String> parseKeys(Reader text) {
        Properties read = new Properties();
        try {
            read.load(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> keys = new LinkedHashMap<>();
        for (String field : FIELDS) {
            String key = read.getProperty(field);
            if (key == null || key.isBlank()) {
                throw new IllegalArgumentException(KEYS_RESOURCE + " gives no key for the field " + field);
            }
            keys.put(field, key.strip());
        }
        Set<String> unknown = new TreeSet<>(read.stringPropertyNames());
        FIELDS.forEach(unknown::remove);
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(KEYS_RESOURCE + " names fields a summary does not have: " + unknown);
        }
        if (new HashSet<>(keys.values()).size() != keys.size()) {
            throw new IllegalArgumentException(KEYS_RESOURCE + " gives two fields one key: " + keys);
        }
        return Map.copyOf(keys);
    }

    private static Map<String, String> shippedKeys() {
        try (InputStream in = RoutingSummary.class.getResourceAsStream(KEYS_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(KEYS_RESOURCE + " is missing from the jar");
            }
            return parseKeys(new InputStreamReader(in, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
