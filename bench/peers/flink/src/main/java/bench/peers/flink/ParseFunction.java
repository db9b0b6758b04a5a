package bench.peers.flink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.util.Collector;

/**
 * Record value (a JSON object) to a {@link Records.Tuple}: key = the string field {@code keyField},
 * count = the integer field {@code countField} (1 when null). A value that is not a JSON object, or
 * whose key field is missing, null or not a string (or count field missing or not an integer that
 * fits a long) is malformed: counted by its id in {@link Progress#MALFORMED}, no tuple, no exception.
 */
public final class ParseFunction implements FlatMapFunction<Records.Raw, Records.Tuple> {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String keyField;
    private final String countField;

    /** @param countField null: every tuple counts 1 */
    public ParseFunction(String keyField, String countField) {
        this.keyField = keyField;
        this.countField = countField;
    }

    @Override
    public void flatMap(Records.Raw r, Collector<Records.Tuple> out) {
        JsonNode node = null;
        if (r.value != null) {
            try {
                node = JSON.readTree(r.value);
            } catch (Exception e) {
                node = null;
            }
        }
        JsonNode key = node == null || !node.isObject() ? null : node.get(keyField);
        JsonNode count = countField == null || key == null ? null : node.get(countField);
        if (key == null || !key.isTextual() || (countField != null
                && (count == null || !count.isIntegralNumber() || !count.canConvertToLong()))) {
            Progress.malformed(r.id);
            return;
        }
        out.collect(new Records.Tuple(r.id, key.textValue(), count == null ? 1 : count.longValue(), r.tsMs, r.releaseMs));
    }
}
