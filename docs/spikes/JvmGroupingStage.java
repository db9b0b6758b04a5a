package spikes;

import groupings.Groupings;
import groupings.ReferenceGrouping;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The grouping stage of docs/spikes/jvm_grouping_stage.py, in the JVM: the tuples grouped by
 * {@code splitter}, one {@link ReferenceGrouping} per splitter kept in Spark's state store (Java
 * serialization in a {@code ValueState<byte[]>}), each batch routed in (partition, offset) order, and
 * {@code event_ts} re-declared as the output's event-time column, as bench/topology/grouping_stage.py
 * does with transformWithStateInPandas. Not the harness's stage: no rescale, no hand-off, no routing
 * summary.
 */
public final class JvmGroupingStage {
    /** The routed tuples: the grouping stage's OUTPUT_SCHEMA without its routing summary. */
    public static final StructType OUTPUT = new StructType()
            .add("event_ts", DataTypes.TimestampType)
            .add("key", DataTypes.StringType)
            .add("count", DataTypes.LongType)
            .add("worker", DataTypes.IntegerType);

    private JvmGroupingStage() {}

    /**
     * @param tuples columns splitter int, partition int, offset long, event_ts timestamp (with a
     *     watermark), key string, count long
     * @return OUTPUT rows, {@code event_ts} the event-time column
     */
    public static Dataset<Row> apply(Dataset<Row> tuples, String grouping, int workers) {
        return tuples.groupByKey((MapFunction<Row, Integer>) row -> row.<Integer>getAs("splitter"), Encoders.INT())
                .transformWithState(new Router(grouping, workers), "event_ts", OutputMode.Append(),
                        Encoders.row(OUTPUT));
    }

    static final class Router extends StatefulProcessor<Integer, Row, Row> {
        private static final Comparator<Row> KAFKA_ORDER = Comparator.<Row>comparingInt(r -> r.getAs("partition"))
                .thenComparingLong(r -> r.getAs("offset"));
        private final String grouping;
        private final int workers;
        private transient ValueState<byte[]> instance;

        Router(String grouping, int workers) {
            this.grouping = grouping;
            this.workers = workers;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            instance = getHandle().getValueState("grouping", Encoders.BINARY(), TTLConfig.NONE());
        }

        @Override
        public scala.collection.Iterator<Row> handleInputRows(Integer splitter, scala.collection.Iterator<Row> rows,
                                                             TimerValues timerValues) {
            List<Row> batch = new ArrayList<>();
            rows.foreach(batch::add);
            batch.sort(KAFKA_ORDER);
            ReferenceGrouping router = instance.exists() ? (ReferenceGrouping) restore(instance.get())
                    : Groupings.create(grouping, workers, batch.get(0).<Timestamp>getAs("event_ts").getTime());
            List<Row> out = new ArrayList<>(batch.size());
            for (Row row : batch) {
                Timestamp ts = row.getAs("event_ts");
                String key = row.getAs("key");
                out.add(RowFactory.create(ts, key, row.<Long>getAs("count"), router.choose(key, ts.getTime())));
            }
            instance.update(save(router));
            return CollectionConverters.asScala(out.iterator());
        }
    }

    static byte[] save(Object value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static Object restore(byte[] saved) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(saved))) {
            return in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }
}
