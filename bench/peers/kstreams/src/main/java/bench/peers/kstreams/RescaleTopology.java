package bench.peers.kstreams;

import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;

/**
 * The peer's topology (Kafka Streams DSL + Processor API):
 *
 * <pre>
 * source(topic, byte[]) -> parse (malformed counted, dropped) -> key = the tuple's key
 *   -> repartition "by-key" (units partitions) -> KeyStateProcessor with store "key-state"
 * </pre>
 *
 * The repartition topic ({@code <application.id>-by-key-repartition}) has {@code units} partitions:
 * its partitions are the units, i.e. the stateful tasks {@code 1_0 .. 1_(units-1)} that a rescale
 * moves. The store is a persistent (RocksDB, Kafka Streams' default) key-value store with its
 * changelog ({@code <application.id>-key-state-changelog}) enabled. Records keep their Kafka
 * timestamp and headers through the repartition topic; the parser adds the header
 * {@value #SOURCE_HEADER} (the input coordinates, {@link Progress#coordinates}).
 */
public final class RescaleTopology {
    /** The key-value store's name. */
    public static final String STORE = "key-state";
    /** The repartition's name (its topic is {@code <application.id>-by-key-repartition}). */
    public static final String REPARTITION = "by-key";
    /** The header carrying a tuple's input coordinates (8 bytes, big-endian long). */
    public static final String SOURCE_HEADER = "bench_source";
    /** The header the paced replayer sets: wall epoch ms, ASCII decimal. */
    public static final String RELEASE_HEADER = "release_ms";

    private RescaleTopology() {}

    /**
     * Builds the topology of one instance.
     *
     * @param topic the input topic
     * @param parser the tuple parser
     * @param units the repartition topic's partition count (the units)
     * @param worker this instance's index (the trace's worker)
     * @param progress where the instance reports reads, malformed records and processed tuples
     */
    public static Topology build(String topic, TupleParser parser, int units, int worker, Progress progress) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.String(),
                KeyState.serde()).withLoggingEnabled(Map.of()));
        builder.stream(topic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()).withName("source"))
                .process(() -> new Parse(parser, progress), Named.as("parse"))
                .repartition(Repartitioned.<String, Long>as(REPARTITION).withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()).withNumberOfPartitions(units))
                .process(() -> new KeyStateProcessor(worker, progress), Named.as("state"), STORE);
        return builder.build();
    }

    /**
     * The unit of a key: the partition Kafka's default partitioner gives its serialised key among
     * {@code units} partitions, {@code toPositive(murmur2(utf8(key))) % units}.
     */
    public static int unitOf(String key, int units) {
        byte[] bytes = new StringSerializer().serialize(null, key);
        return Utils.toPositive(Utils.murmur2(bytes)) % units;
    }

    /** Parses a record's value into (key, count), keeps its timestamp and headers, counts malformed ones. */
    static final class Parse implements Processor<byte[], byte[], String, Long> {
        private final TupleParser parser;
        private final Progress progress;
        private ProcessorContext<String, Long> context;

        Parse(TupleParser parser, Progress progress) {
            this.parser = parser;
            this.progress = progress;
        }

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            long coordinates = context.recordMetadata()
                    .map(m -> Progress.coordinates(m.partition(), m.offset())).orElse(-1L);
            progress.read(coordinates);
            TupleParser.Tuple tuple = parser.parse(record.value());
            if (tuple == null) {
                progress.malformed(coordinates);
                return;
            }
            Headers headers = new RecordHeaders(record.headers().toArray());
            headers.remove(SOURCE_HEADER);
            headers.add(SOURCE_HEADER, ByteBuffer.allocate(8).putLong(coordinates).array());
            context.forward(new Record<>(tuple.key(), tuple.count(), record.timestamp(), headers));
        }
    }
}
