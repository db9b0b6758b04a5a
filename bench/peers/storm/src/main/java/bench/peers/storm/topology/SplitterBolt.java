package bench.peers.storm.topology;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * Storm's SplitterBolt for the COUNTRY records ({@code {"country":"Turkey"}}, reference §11): one
 * tuple {@code (key, count = 1, ts)} per record, ts being the Kafka timestamp (ms). Like the
 * harness's splitter ({@code datasets/common.py} {@code splitter_sql}), a record in the producers'
 * compact form gives its key straight from the bytes, and any other record is parsed as JSON
 * (Jackson, strict duplicate detection); a record that is not UTF-8, not a JSON object, or lacks a
 * string {@code keyField} is counted as malformed and emits nothing (the harness sends it to its
 * dead-letter topic). Unanchored emits: acking is off.
 */
public final class SplitterBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;

    private final String keyField;
    private transient OutputCollector collector;
    private transient byte[] prefix;
    private transient ObjectMapper mapper;
    private transient CharsetDecoder utf8;

    public SplitterBolt(String keyField) {
        this.keyField = keyField;
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        this.prefix = ("{\"" + keyField + "\":\"").getBytes(StandardCharsets.UTF_8);
        this.mapper = new ObjectMapper();
        mapper.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
        this.utf8 = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    }

    @Override
    public void execute(Tuple input) {
        PeerProgress.RECORDS.increment();
        byte[] value = (byte[]) input.getValue(3);
        String key = value == null ? null : keyOf(value);
        if (key == null) {
            PeerProgress.MALFORMED.increment();
            return;
        }
        collector.emit(new Values(key, 1L, input.getLong(2)));
        PeerProgress.TUPLES_EMITTED.increment();
    }

    /** The record's key, or null when the record is malformed. */
    String keyOf(byte[] value) {
        int end = value.length - 2; // before the closing `"}`
        if (value.length >= prefix.length + 2 && startsWith(value, prefix)
                && value[end] == '"' && value[end + 1] == '}') {
            boolean plain = true;
            for (int i = prefix.length; i < end; i++) {
                if (value[i] == '"' || value[i] == '\\') {
                    plain = false;
                    break;
                }
            }
            if (plain) {
                try {
                    return utf8.decode(ByteBuffer.wrap(value, prefix.length, end - prefix.length)).toString();
                } catch (CharacterCodingException e) {
                    return null;
                }
            }
        }
        try {
            utf8.decode(ByteBuffer.wrap(value)); // not UTF-8: a dead letter in the harness
            JsonNode root = mapper.readTree(value);
            JsonNode field = root == null || !root.isObject() ? null : root.get(keyField);
            return field != null && field.isTextual() ? field.textValue() : null;
        } catch (Exception e) {
            return null;
        }
    }

    private static boolean startsWith(byte[] value, byte[] prefix) {
        for (int i = 0; i < prefix.length; i++) {
            if (value[i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("key", "count", "ts"));
    }
}
