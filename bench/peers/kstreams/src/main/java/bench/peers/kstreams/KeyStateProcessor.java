package bench.peers.kstreams;

import bench.peers.contract.PeerOutputs.TraceRow;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The stateful worker: adds each tuple to its key's {@link KeyState} in the store
 * {@value RescaleTopology#STORE} (get, then put: the put goes to RocksDB and, through the record
 * cache, to the changelog at the next commit) and reports one trace row. The unit is the
 * partition of the repartition topic the record came from (= the task's partition).
 */
public final class KeyStateProcessor implements Processor<String, Long, Void, Void> {
    private final int worker;
    private final Progress progress;
    private ProcessorContext<Void, Void> context;
    private KeyValueStore<String, KeyState> store;

    /** @param worker the instance index; @param progress where processed tuples are reported */
    public KeyStateProcessor(int worker, Progress progress) {
        this.worker = worker;
        this.progress = progress;
    }

    @Override
    public void init(ProcessorContext<Void, Void> context) {
        this.context = context;
        this.store = context.getStateStore(RescaleTopology.STORE);
    }

    @Override
    public void process(Record<String, Long> record) {
        KeyState old = store.get(record.key());
        store.put(record.key(), old == null ? KeyState.first(record.value(), record.timestamp())
                : old.plus(record.value(), record.timestamp()));
        long processedMs = System.currentTimeMillis();
        int unit = context.recordMetadata().map(m -> m.partition()).orElse(-1);
        Header source = record.headers().lastHeader(RescaleTopology.SOURCE_HEADER);
        long coordinates = source == null ? -1 : ByteBuffer.wrap(source.value()).getLong();
        progress.processed(coordinates, new TraceRow(record.key(), unit, worker,
                releaseMs(record.headers().lastHeader(RescaleTopology.RELEASE_HEADER)), processedMs), record.timestamp());
    }

    private static Long releaseMs(Header header) {
        if (header == null || header.value() == null) {
            return null;
        }
        try {
            return Long.parseLong(new String(header.value(), StandardCharsets.US_ASCII).trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
