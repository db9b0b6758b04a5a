package bench.peers.flink;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Kafka record to {@link Records.Raw}: the value (UTF-8), the Kafka timestamp and the header
 * {@code release_ms} (ASCII decimal epoch ms, -1 when absent). Never fails: parsing the value is the
 * next operator's job. Counts every record it reads by its id, partition and offset ({@link
 * Progress#read(long)}): the KafkaSource calls it in the source task once per record emitted, and a
 * record read again after a restart from a checkpoint is the same record.
 */
public final class RecordDeserializer implements KafkaRecordDeserializationSchema<Records.Raw> {
    private static final long serialVersionUID = 1L;
    /** The header the paced replayer sets. */
    public static final String RELEASE_HEADER = "release_ms";

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Records.Raw> out) throws IOException {
        long id = Records.id(record.partition(), record.offset());
        Progress.read(id);
        String value = record.value() == null ? null : new String(record.value(), StandardCharsets.UTF_8);
        out.collect(new Records.Raw(id, value, record.timestamp(), releaseMs(record.headers().lastHeader(RELEASE_HEADER))));
    }

    static long releaseMs(Header h) {
        if (h == null || h.value() == null) {
            return -1;
        }
        try {
            return Long.parseLong(new String(h.value(), StandardCharsets.US_ASCII).strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @Override
    public TypeInformation<Records.Raw> getProducedType() {
        return TypeInformation.of(Records.Raw.class);
    }
}
