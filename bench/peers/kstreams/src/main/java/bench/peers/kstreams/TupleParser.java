package bench.peers.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A record's value (one UTF-8 JSON object) -> its tuple (key, count), as the contract defines:
 * key = the string field {@code keyField}; count = the integer field {@code countField}, or 1 when
 * there is none. Thread-safe.
 */
public final class TupleParser {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String keyField;
    private final String countField;

    /**
     * One parsed tuple.
     *
     * @param key the key
     * @param count the tuple's count (1 without a count field)
     */
    public record Tuple(String key, long count) {}

    /** @param keyField the key's field; @param countField the count's field, null for count 1 */
    public TupleParser(String keyField, String countField) {
        this.keyField = keyField;
        this.countField = countField;
    }

    /**
     * @param value the record's value bytes (may be null)
     * @return the tuple, or null when the record is malformed: not a JSON object, key missing, null
     *     or not a string, count field missing or not an integer. Never throws.
     */
    public Tuple parse(byte[] value) {
        if (value == null) {
            return null;
        }
        JsonNode node;
        try {
            node = JSON.readTree(value);
        } catch (Exception e) {
            return null;
        }
        if (node == null || !node.isObject()) {
            return null;
        }
        JsonNode key = node.get(keyField);
        if (key == null || !key.isTextual()) {
            return null;
        }
        long count = 1;
        if (countField != null) {
            JsonNode c = node.get(countField);
            if (c == null || !c.isIntegralNumber() || !c.canConvertToLong()) {
                return null;
            }
            count = c.asLong();
        }
        return new Tuple(key.asText(), count);
    }
}
