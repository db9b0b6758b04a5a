package bench.topology;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The workers' per-key state in the JVM (bench/topology/worker_state.py builds its input and reads
 * it back): what a rescale moves. Per key a worker processed it keeps {@code count} (tuples),
 * {@code sum} (of the tuples' {@code count} field), {@code first_ts_ms} and {@code last_ts_ms}
 * (Kafka timestamps, epoch ms), the simulator's state.parquet columns.
 *
 * <p>{@code transformWithState} keyed by the worker's <em>slot</em> (bench/topology/state_layout.py:
 * the int whose hash puts worker w's state in state partition {@code w mod N}), with a {@code MapState}
 * {@value #STATE_VAR} (user key {@code struct<key>}, value {@code struct<count, sum, first_ts_ms,
 * last_ts_ms>}), so that Spark's state data source reads it as {@code read_final_state} expects. In
 * each call an instance first applies the state-transfer records of its slot (bench/topology/
 * state_transfer.py: {@code extract} drops keys, {@code install} merges entries as if their tuples
 * came now; a record whose id its slot has in {@value #APPLIED_VAR} is skipped, so records read
 * twice change nothing), then merges the call's tuples (one state read and write per distinct key)
 * and emits them again with {@code event_ts} as the event-time column. Applying a record does not
 * depend on the tuples around it: in a micro-batch the records come in the batch that moves the
 * keys, before its tuples; in Real-Time Mode they arrive while the tuples flow, and a moved key's
 * first tuples may reach its new owner before its install does.
 * It checks that it runs in the state partition its slot gives ({@code WorkerStatePlacementError}).
 */
public final class WorkerState {
    /** The MapState's name (the state data source's {@code stateVarName}). */
    public static final String STATE_VAR = "per_key";
    /** The ids of the transfer records a slot has applied ({@code <epoch>|<kind>|<chunk>}). */
    static final String APPLIED_VAR = "transfers_applied";

    /** The operator's input: a worker's tuple ({@code transfer} NULL) or a transfer record for a
     * slot ({@code worker} -1, {@code event_ms}, {@code key}, {@code count} and {@code done_us}
     * NULL). {@code done_us}: when the worker was done with the tuple, epoch µs (WorkerTask), carried
     * to the worker windows for the real-time mode's per-tuple latency; NULL when not measured.
     * bench/topology/worker_state.py reads this schema from here. */
    public static final StructType INPUT = new StructType()
            .add("slot", DataTypes.IntegerType)
            .add("worker", DataTypes.IntegerType)
            .add("event_ms", DataTypes.LongType)
            .add("key", DataTypes.StringType)
            .add("count", DataTypes.LongType)
            .add("transfer", DataTypes.StringType)
            .add("done_us", DataTypes.LongType);

    /** The tuples again, after their worker merged them. */
    public static final StructType OUTPUT = new StructType()
            .add("event_ts", DataTypes.TimestampType)
            .add("worker", DataTypes.IntegerType)
            .add("key", DataTypes.StringType)
            .add("count", DataTypes.LongType)
            .add("done_us", DataTypes.LongType);

    static final StructType STATE_KEY = new StructType().add("key", DataTypes.StringType);
    static final StructType STATE_VALUE = new StructType()
            .add("count", DataTypes.LongType)
            .add("sum", DataTypes.LongType)
            .add("first_ts_ms", DataTypes.LongType)
            .add("last_ts_ms", DataTypes.LongType);
    static final StructType GROUP_KEY = new StructType().add("slot", DataTypes.IntegerType);
    /** Seed of Spark's {@code Murmur3Hash} (SQL {@code hash()}, {@code HashPartitioning}). */
    static final int SPARK_HASH_SEED = 42;

    private WorkerState() {}

    /**
     * The worker-state operator.
     *
     * @param input {@link #INPUT} rows: the worker stage's tuples with their slot, and a rescale's
     *     transfer records (none in a run without transfers)
     * @param partitions N, the query's state partitions (the placement check)
     * @return {@link #OUTPUT} rows, one per tuple; {@code event_ts} is the event-time column
     * @throws IllegalArgumentException for N below 1 or an input without {@link #INPUT}'s columns
     */
    public static Dataset<Row> apply(Dataset<Row> input, int partitions) {
        if (partitions < 1) {
            throw new IllegalArgumentException("state partitions must be at least 1, got " + partitions);
        }
        Dataset<Row> rows = input.selectExpr(INPUT.fieldNames());
        if (!rows.schema().sameType(INPUT)) {
            throw new IllegalArgumentException("worker-state input must be " + INPUT.simpleString() + ", got "
                    + rows.schema().simpleString());
        }
        return rows.groupBy("slot").as(Encoders.row(GROUP_KEY), Encoders.row(INPUT))
                .transformWithState(new Merger(partitions), "event_ts", OutputMode.Append(), Encoders.row(OUTPUT));
    }

    /** The state partition of slot {@code slot}: {@code pmod(hash(slot), partitions)}, as
     * state_layout.py's {@code state_partition}. */
    static int statePartition(int slot, int partitions) {
        return Math.floorMod(Murmur3_x86_32.hashInt(slot, SPARK_HASH_SEED), partitions);
    }

    /** One key's figures of one batch, or merged. */
    static final class Figures {
        long count;
        long sum;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;

        void add(long weight, long eventMs) {
            count += 1;
            sum += weight;
            first = Math.min(first, eventMs);
            last = Math.max(last, eventMs);
        }

        void merge(Row stored) {
            merge(stored.getLong(0), stored.getLong(1), stored.getLong(2), stored.getLong(3));
        }

        void merge(long count, long sum, long first, long last) {
            this.count += count;
            this.sum += sum;
            this.first = Math.min(this.first, first);
            this.last = Math.max(this.last, last);
        }

        Row row() {
            return RowFactory.create(count, sum, first, last);
        }
    }

    /** One transfer record: {@code {"epoch": e, "slot": s, "chunk": c, "extract": [key, ...]}} or
     * {@code {..., "install": [[key, count, sum, first_ts_ms, last_ts_ms], ...]}}. */
    record Transfer(long epoch, boolean install, long chunk, JsonNode entries) {
        static final Comparator<Transfer> ORDER = Comparator.comparingLong(Transfer::epoch)
                .thenComparing(Transfer::install).thenComparingLong(Transfer::chunk);

        static Transfer parse(String text) {
            JsonNode record;
            try {
                record = GroupingStage.JSON.readTree(text);
            } catch (IOException e) {
                throw new UncheckedIOException("unreadable state-transfer record " + text, e);
            }
            boolean install = record.has("install");
            return new Transfer(record.get("epoch").asLong(), install, record.path("chunk").asLong(0),
                    record.get(install ? "install" : "extract"));
        }

        /** The record's id within its slot. */
        String id() {
            return epoch + "|" + (install ? "install" : "extract") + "|" + chunk;
        }
    }

    static final class Merger extends StatefulProcessor<Row, Row, Row> {
        private static final long serialVersionUID = 1L;
        private final int partitions;
        private transient MapState<Row, Row> perKey;
        private transient MapState<String, Boolean> applied;

        Merger(int partitions) {
            this.partitions = partitions;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            perKey = getHandle().getMapState(STATE_VAR, Encoders.row(STATE_KEY), Encoders.row(STATE_VALUE),
                    TTLConfig.NONE());
            applied = getHandle().getMapState(APPLIED_VAR, Encoders.STRING(), Encoders.BOOLEAN(), TTLConfig.NONE());
        }

        @Override
        public scala.collection.Iterator<Row> handleInputRows(Row group, scala.collection.Iterator<Row> rows,
                                                             TimerValues timerValues) {
            int slot = group.getInt(0);
            int partition = TaskContext.getPartitionId();
            if (partition != statePartition(slot, partitions)) {
                throw new IllegalStateException("WorkerStatePlacementError: slot " + slot
                        + " ran in state partition " + partition);
            }
            List<Transfer> transfers = new ArrayList<>();
            Map<String, Figures> batch = new LinkedHashMap<>();
            List<Row> out = new ArrayList<>();
            rows.foreach(row -> {
                if (!row.isNullAt(5)) {
                    transfers.add(Transfer.parse(row.getString(5)));
                } else {
                    long eventMs = row.getLong(2);
                    String key = row.getString(3);
                    long count = row.getLong(4);
                    batch.computeIfAbsent(key, k -> new Figures()).add(count, eventMs);
                    Long doneUs = row.isNullAt(6) ? null : row.getLong(6);
                    out.add(RowFactory.create(new Timestamp(eventMs), row.getInt(1), key, count, doneUs));
                }
                return null;
            });
            if (!transfers.isEmpty()) {
                apply(transfers);
            }
            for (Map.Entry<String, Figures> entry : batch.entrySet()) {
                Row key = RowFactory.create(entry.getKey());
                Figures figures = entry.getValue();
                Row stored = perKey.getValue(key);
                if (stored != null) {
                    figures.merge(stored);
                }
                perKey.updateValue(key, figures.row());
            }
            return CollectionConverters.asScala(out.iterator());
        }

        /** The slot's transfer records of this call that it has not applied yet, in epoch order. */
        private void apply(List<Transfer> transfers) {
            transfers.sort(Transfer.ORDER);
            for (Transfer transfer : transfers) {
                if (applied.containsKey(transfer.id())) {
                    continue;
                }
                for (JsonNode entry : transfer.entries()) {
                    if (transfer.install()) {
                        Row key = RowFactory.create(entry.get(0).asText());
                        Figures figures = new Figures();
                        figures.merge(entry.get(1).asLong(), entry.get(2).asLong(), entry.get(3).asLong(),
                                entry.get(4).asLong());
                        Row stored = perKey.getValue(key);
                        if (stored != null) {
                            figures.merge(stored);
                        }
                        perKey.updateValue(key, figures.row());
                    } else {
                        perKey.removeKey(RowFactory.create(entry.asText()));
                    }
                }
                applied.updateValue(transfer.id(), true);
            }
        }
    }
}
