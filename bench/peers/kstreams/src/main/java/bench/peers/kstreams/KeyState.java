package bench.peers.kstreams;

import java.nio.ByteBuffer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The per-key worker state of the harness: tuples seen, the sum of their counts, and the smallest
 * and largest Kafka timestamp (epoch ms). Stored as 32 bytes (four big-endian longs).
 *
 * @param count tuples
 * @param sum the sum of the tuples' counts
 * @param firstTsMs the smallest Kafka timestamp (epoch ms)
 * @param lastTsMs the largest Kafka timestamp (epoch ms)
 */
public record KeyState(long count, long sum, long firstTsMs, long lastTsMs) {

    /** The state after one tuple with {@code count} at Kafka timestamp {@code tsMs} (epoch ms). */
    public static KeyState first(long count, long tsMs) {
        return new KeyState(1, count, tsMs, tsMs);
    }

    /** This state plus one tuple with {@code count} at Kafka timestamp {@code tsMs} (epoch ms). */
    public KeyState plus(long count, long tsMs) {
        return new KeyState(this.count + 1, sum + count, Math.min(firstTsMs, tsMs), Math.max(lastTsMs, tsMs));
    }

    /** The serde of the store's values (32 bytes; null stays null). */
    public static Serde<KeyState> serde() {
        Serializer<KeyState> ser = (topic, s) -> s == null ? null
                : ByteBuffer.allocate(32).putLong(s.count).putLong(s.sum).putLong(s.firstTsMs).putLong(s.lastTsMs).array();
        Deserializer<KeyState> de = (topic, b) -> {
            if (b == null) {
                return null;
            }
            ByteBuffer buf = ByteBuffer.wrap(b);
            return new KeyState(buf.getLong(), buf.getLong(), buf.getLong(), buf.getLong());
        };
        return Serdes.serdeFrom(ser, de);
    }
}
