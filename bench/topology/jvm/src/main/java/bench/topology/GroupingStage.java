package bench.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.JsonNode;
import groupings.Groupings;
import groupings.OwnershipGrouping;
import groupings.ReferenceGrouping;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The grouping stage in the JVM (docs/architecture.md, "Control plane and data plane"): Storm's custom
 * stream grouping, one {@link ReferenceGrouping} per splitter instance kept in Spark's state store,
 * routing exactly as bench/topology/grouping_stage.py's {@code route_batch} does for a run without
 * a rescale, with the Java groupings of groupings/jvm (checked against the same golden vectors as
 * the Python ones).
 *
 * <p>{@code transformWithState} keyed by {@code splitter}; each micro-batch, an instance sorts its
 * tuples into Kafka order (partition, offset, idx), computes each tuple's clock ({@code kafka}: the
 * running maximum of the Kafka timestamps, kept across batches; {@code processing}: the batch's
 * wall clock, never going back), routes them with {@link ReferenceGrouping#choose}, and writes the
 * batch's routing summary (per-worker loads and tuples, the distinct (worker, key) pairs sorted as
 * Python sorts them) as JSON on its first output row, which the worker stage's observed metrics
 * collect. The instance and its clock are Java-serialized into one {@code
 * ValueState} (the groupings restore with the same iteration order, groupings/jvm
 * SerializationTest), so a query restarted from its checkpoint routes on exactly.
 *
 * <p>Rescales ({@link Rescale}): the control plane (Python, bench/rescale) decides every routing of
 * the run's schedule and hands them over as owner tables (KEY: its worker count); an instance
 * installs routing k when switch k is due: STOP_THE_WORLD's switch batches (the query is restarted
 * with them; the batch id is the one Spark's micro-batch execution gives every task; in Real-Time
 * Mode every switch the restarted query is given is due, since it never runs a batch of an earlier
 * routing again), or a live
 * rescale's switch records, which the rescale channel gives every splitter instance in the same
 * batch as control rows ({@link #CONTROL_INPUT}). Each instance keeps the number of switches it
 * installed ({@code rescale_epoch}), also before it has a tuple, so an instance created later
 * starts with the routing in force. A HANDOFF's steps come in the same control rows; each instance
 * keeps its part of the hand-off ({@link Handoff}: pending and held units, kept tuples) in its state
 * and checks the tuples it releases against the watermark, which reaches it because the stage runs
 * in event-time mode (the overload with an event-time column).
 *
 * <p>The tuples never leave the JVM here: the Python path packs them into Arrow for
 * transformWithStateInPandas and unpacks them in a Python worker.
 */
public final class GroupingStage {
    /** The column of {@link #OUTPUT} that carries a batch's routing summary. */
    public static final String ROUTED = "routed";

    /** The column of {@link #CONTROL_INPUT} that carries a switch record. */
    public static final String CONTROL = "control";

    /** The routed tuples, the output of both grouping stages (this one and the Python one,
     * bench/topology/grouping_stage.py, which reads it from here: bench/topology/jvm_stage.py
     * {@code output_schema}): {@code event_ts} is again the event-time column; {@link #ROUTED} the
     * routing summary (NULL but on one row). In Real-Time Mode, which builds no routing summary,
     * {@link #ROUTED} carries instead a rescale's state-transfer record on a row of its own
     * ({@code key} and {@code count} NULL, {@code worker} the record's, {@code event_ts} 1 ms after
     * the watermark): Real-Time Mode refuses a union after a stateful operator, so the records enter
     * the query before the grouping stage, as control rows, and the stage passes them on to the
     * worker-state operator (bench/topology/realtime.py). */
    public static final StructType OUTPUT = new StructType()
            .add("event_ts", DataTypes.TimestampType)
            .add("key", DataTypes.StringType)
            .add("count", DataTypes.LongType)
            .add("worker", DataTypes.IntegerType)
            .add(ROUTED, DataTypes.StringType);

    /** A control row: a live rescale's switch record ({@code control}, JSON with {@code "switch": k})
     * for one splitter instance, its other columns NULL (bench/topology/rescale_channel.py), or in
     * Real-Time Mode a state-transfer record to pass on (bench/topology/state_transfer.py). */
    public static final StructType CONTROL_INPUT = new StructType()
            .add("splitter", DataTypes.IntegerType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("idx", DataTypes.IntegerType)
            .add("event_ts", DataTypes.TimestampType)
            .add("key", DataTypes.StringType)
            .add("count", DataTypes.LongType)
            .add(CONTROL, DataTypes.StringType);

    /** Jackson's mapper, thread-safe once configured: one per JVM (a new one per record builds its
     * deserializers again). */
    static final ObjectMapper JSON = new ObjectMapper();

    /** The task-local property in which Spark's micro-batch execution gives every task its batch id. */
    static final String BATCH_ID_PROPERTY = "streaming.sql.batchId";

    private GroupingStage() {}

    /**
     * The grouping stage over the splitter's tuples.
     *
     * @param tuples columns {@code splitter int, partition int, offset long, idx int, event_ts
     *     timestamp} (the event-time column, with its watermark) {@code , key string, count long}
     * @param grouping one of {@link Groupings#NAMES}
     * @param workers W
     * @param clock {@code kafka} or {@code processing} (bench's {@code --grouping-clock})
     * @param params the grouping's parameters as a JSON object of integers (bench's {@code --param};
     *     {@link Groupings#PARAMETERS}), {@code {}} for its reference defaults
     * @return {@link #OUTPUT} rows, one per tuple
     * @throws IllegalArgumentException for a grouping with no Java implementation, a parameter it
     *     does not take here or one that is not an integer, W below 1 or an unknown clock
     */
    public static Dataset<Row> apply(Dataset<Row> tuples, String grouping, int workers, String clock, String params) {
        return apply(tuples, grouping, workers, clock, params, "{}", null);
    }

    /**
     * The grouping stage of a rescale run.
     *
     * @param rescale {@code {}} for none, or {@code {"width": M, "routings": [r1, ...], "switch_batches":
     *     [b1, ...]}}: M the worker-id space of the routing summaries; routing k the one in force after
     *     the schedule's k-th event, {@code {"workers": n}} (KEY) or {@code {"owners": [owner of each
     *     group]}} (KEY_GROUP, VNODE); {@code switch_batches}: STOP_THE_WORLD's, the first batch each
     *     switch so far routes (absent for a live rescale); {@code "handoff": true} for a HANDOFF,
     *     whose steps ({@link Handoff#CONTROL_KEY}) come with the control rows
     * @param controls a live rescale's {@link #CONTROL_INPUT} rows, or null
     * @throws IllegalArgumentException as {@link #apply(Dataset, String, int, String, String)}, and for
     *     a routing the grouping cannot install (KEY's needs {@code workers}, an ownership grouping's
     *     {@code owners} of its group count), a HANDOFF without control rows or of a grouping without
     *     groups (KEY)
     */
    public static Dataset<Row> apply(Dataset<Row> tuples, String grouping, int workers, String clock, String params,
                                     String rescale, Dataset<Row> controls) {
        return apply(tuples, grouping, workers, clock, params, rescale, controls, false);
    }

    /**
     * The grouping stage, in a micro-batch query or (with {@code realTime}) in Real-Time Mode.
     *
     * <p>Real-Time Mode hands the operator one row per call ({@code handleInputRows} with a single
     * row) for the whole real-time batch, so an instance restored from its state for every call
     * costs a Java deserialization per tuple: with DYNAMIC_KEY, 40 % of the executor tasks' time at
     * 500 tuples/s (Java Flight Recorder, 2026-11-29). Each task keeps its instances in memory
     * instead, restored once per batch. A batch may commit after any row, and the state must then
     * give the instance as that row left it, and a Java serialization per row is dear: DYNAMIC_KEY
     * at 8,000 tuples/s and cost 0 (make capacity, real-time step, 2026-11-29, two runs each,
     * interleaved) had p99 11.6-13.5 s and 386-405 us of CPU per record that way, against 1.1-3.7 s
     * and 307-335 us with the changelog (neither holds; 4,000 tuples/s held before). So the state is
     * a snapshot and a changelog: each routed tuple appends its key and clock to the changelog, and the
     * next batch restores the snapshot, replays the changelog through it ({@link
     * ReferenceGrouping#choose} is deterministic), and writes it as the new snapshot once. (An
     * event-time timer does not mark a batch's end: Real-Time Mode fires expired timers between
     * rows.) No routing summary is built (the real-time query observes no metrics: its aggregator
     * counts the loads, bench/topology/realtime.py).
     *
     * <p>A real-time query without {@code controls} runs the operator in {@code TimeMode.None()}, and
     * its output's {@code event_ts} is not an event-time column: the caller defines the watermark on
     * it ({@code withWatermark}), and must not on the input (Spark refuses a watermark below another).
     * The overload that keeps it one runs in {@code TimeMode.EventTime()},
     * which looks up expired timers after every call, one a row in Real-Time Mode, for a router that
     * registers none: two to three times the CPU a record of the whole query on a backlog at cost 0
     * (docs/performance.md, "The grouping stage's time mode"). A state-transfer record needs the
     * operator's watermark ({@code forwarded}), so a query with {@code controls} keeps event time.
     *
     * @param realTime the query runs in Real-Time Mode: STOP_THE_WORLD's switches, each due from the
     *     query's first batch, or with {@code "channel": folder} in {@code rescale} a SHARED_STATE's
     *     or LEARNER's, read at each real-time batch's start ({@link ChannelBarrier}); {@code controls} are the
     *     state-transfer records
     * @throws IllegalArgumentException as {@link #apply(Dataset, String, int, String, String, String, Dataset)},
     *     and for a HANDOFF in Real-Time Mode
     */
    public static Dataset<Row> apply(Dataset<Row> tuples, String grouping, int workers, String clock, String params,
                                     String rescale, Dataset<Row> controls, boolean realTime) {
        if (!Groupings.NAMES.contains(grouping)) {
            throw new IllegalArgumentException("no Java grouping " + grouping + "; expected one of " + Groupings.NAMES);
        }
        if (workers < 1) {
            throw new IllegalArgumentException("workers must be at least 1, got " + workers);
        }
        if (!clock.equals("kafka") && !clock.equals("processing")) {
            throw new IllegalArgumentException("clock must be kafka or processing, got " + clock);
        }
        HashMap<String, Long> parameters = parameters(params);
        Rescale plan = Rescale.parse(rescale, workers, controls != null && !realTime, realTime);
        ReferenceGrouping probe = Groupings.create(grouping, workers, 0, parameters); // bad parameters fail here
        for (Routing routing : plan.routings) {
            routing.install(probe); // and a routing it cannot take, not in the query's first batch
        }
        if (plan.handoff && !(probe instanceof OwnershipGrouping)) {
            throw new IllegalArgumentException("HANDOFF hands over key groups or vnodes; " + grouping + " has none");
        }
        Dataset<Row> input = tuples.select("splitter", "partition", "offset", "idx", "event_ts", "key", "count")
                .withColumn(CONTROL, functions.lit(null).cast(DataTypes.StringType));
        if (controls != null) {
            input = input.unionByName(controls.selectExpr(CONTROL_INPUT.fieldNames()));
        }
        Router router = new Router(grouping, parameters, workers, clock.equals("kafka"), plan, realTime);
        KeyValueGroupedDataset<Integer, Row> bySplitter =
                input.groupByKey((MapFunction<Row, Integer>) row -> row.getInt(0), Encoders.INT());
        if (realTime && controls == null) {
            return bySplitter.transformWithState(router, TimeMode.None(), OutputMode.Append(), Encoders.row(OUTPUT));
        }
        return bySplitter.transformWithState(router, "event_ts", OutputMode.Append(), Encoders.row(OUTPUT));
    }

    /** {@code params} (a JSON object) as parameter name -> integer value. */
    static HashMap<String, Long> parameters(String params) {
        Map<String, Object> parsed;
        try {
            parsed = JSON.readValue(params, new TypeReference<Map<String, Object>>() {});
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("grouping parameters must be a JSON object, got " + params, e);
        }
        HashMap<String, Long> out = new HashMap<>();
        for (Map.Entry<String, Object> entry : parsed.entrySet()) {
            Object value = entry.getValue();
            if (!(value instanceof Integer || value instanceof Long)) {
                throw new IllegalArgumentException("grouping parameter " + entry.getKey()
                        + " must be an integer in the Java port, got " + value);
            }
            out.put(entry.getKey(), ((Number) value).longValue());
        }
        return out;
    }

    /** One splitter instance's grouping and its clock (epoch ms). */
    static final class Instance implements Serializable {
        private static final long serialVersionUID = 1L;
        final ReferenceGrouping grouping;
        long clockMs;

        Instance(ReferenceGrouping grouping, long clockMs) {
            this.grouping = grouping;
            this.clockMs = clockMs;
        }
    }

    static final class Router extends StatefulProcessor<Integer, Row, Row> {
        private static final long serialVersionUID = 1L;
        private static final Comparator<Row> KAFKA_ORDER = Comparator.<Row>comparingInt(r -> r.getInt(1))
                .thenComparingLong(r -> r.getLong(2))
                .thenComparingInt(r -> r.getInt(3));
        private final String grouping;
        private final HashMap<String, Long> params;
        private final int workers;
        private final boolean kafkaClock;
        private final Rescale rescale;
        private final boolean realTime;
        /** Real-Time Mode: this task's instances, by splitter, as routed so far (their snapshot and
         * changelog hold the same). */
        private transient HashMap<Integer, Instance> routers;
        private transient ValueState<byte[]> instance;
        /** Real-Time Mode: (key, clock ms) of each tuple routed since {@link #instance}'s snapshot, by its
         * position from 0 (a map: a list state's append slowed as its list grew, to 30 tuples/s). */
        private transient MapState<Long, Tuple2<String, Long>> changelog;
        /** Real-Time Mode: the position of each instance's next tuple in its changelog. */
        private transient HashMap<Integer, Long> logged;
        private transient ValueState<Integer> epoch;
        private transient ValueState<byte[]> handoffState;
        /** Real-Time Mode's live rescale: the batch-id property this task last read the channel in, and
         * what was due then (a tuple's call reads no folder and takes no lock while its batch lasts). */
        private transient String channelBatch;
        private transient ChannelBarrier.Due channelDue;
        /** Real-Time Mode's HANDOFF: this task's parts of the hand-off, by splitter, as {@link #handoffState}
         * holds them (a tuple's call deserializes nothing). */
        private transient HashMap<Integer, Handoff> handoffs;

        Router(String grouping, HashMap<String, Long> params, int workers, boolean kafkaClock, Rescale rescale,
               boolean realTime) {
            this.grouping = grouping;
            this.params = params;
            this.workers = workers;
            this.kafkaClock = kafkaClock;
            this.rescale = rescale;
            this.realTime = realTime;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            routers = new HashMap<>();
            instance = getHandle().getValueState("grouping", Encoders.BINARY(), TTLConfig.NONE());
            if (realTime) {
                changelog = getHandle().getMapState("changelog", Encoders.LONG(),
                        Encoders.tuple(Encoders.STRING(), Encoders.LONG()), TTLConfig.NONE());
                logged = new HashMap<>();
            }
            if (rescale.any()) {
                epoch = getHandle().getValueState("rescale_epoch", Encoders.INT(), TTLConfig.NONE());
            }
            if (rescale.handoff) {
                handoffState = getHandle().getValueState("handoff", Encoders.BINARY(), TTLConfig.NONE());
                handoffs = realTime ? new HashMap<>() : null;
            }
        }

        @Override
        public scala.collection.Iterator<Row> handleInputRows(Integer splitter, scala.collection.Iterator<Row> rows,
                                                             TimerValues timerValues) {
            List<Row> batch = new ArrayList<>();
            List<JsonNode> controls = new ArrayList<>();
            rows.foreach(row -> {
                if (row.isNullAt(7)) {
                    batch.add(row);
                } else {
                    controls.add(control(row.getString(7)));
                }
                return null;
            });
            int applied = 0;
            int due = 0;
            if (rescale.any()) {
                applied = epoch.exists() ? epoch.get() : 0;
                due = dueSwitch(applied, controls);
                if (due > rescale.routings.size()) {
                    throw new IllegalStateException("switch " + due + " of a schedule of " + rescale.routings.size());
                }
                if (due > applied) {
                    epoch.update(due); // an instance with no tuple yet starts with this routing
                }
            }
            Handoff handoff = rescale.handoff
                    ? handoff(splitter, rescale.channel != null ? channelDue.steps() : controls) : null;
            List<Row> forwarded = realTime ? forwarded(controls, timerValues) : new ArrayList<>();
            // an instance that exists installs a due switch even in a call without tuples: the epoch
            // now says it has
            boolean switching = due > applied && (routers.containsKey(splitter) || instance.exists());
            if (batch.isEmpty() && !switching && (handoff == null || !handoff.releases() || !instance.exists())) {
                return CollectionConverters.asScala(forwarded.iterator());
            }
            batch.sort(KAFKA_ORDER);
            Instance router = routers.get(splitter);
            if (router == null && instance.exists()) {
                router = (Instance) restore(instance.get());
                if (realTime) {
                    replayChangelog(router);
                }
            }
            long[] now = clock(batch, router == null ? null : router.clockMs, System.currentTimeMillis());
            boolean created = router == null;
            if (created) {
                router = new Instance(Groupings.create(grouping, workers, now[0], params), now[0]);
                applied = 0;
            }
            if (due > applied) {
                rescale.routings.get(due - 1).install(router.grouping);
            }
            RoutingSummary summary = realTime ? null : new RoutingSummary(rescale.width);
            List<Row> out;
            if (handoff != null && handoff.active()) {
                out = handOver(handoff, (OwnershipGrouping) router.grouping, batch, now, timerValues, summary);
            } else {
                out = route(router, batch, now, summary);
            }
            if (summary != null && !out.isEmpty()) {
                Row first = out.get(0);
                out.set(0, RowFactory.create(first.get(0), first.get(1), first.get(2), first.get(3), summary.json()));
            }
            if (now.length > 0) {
                router.clockMs = now[now.length - 1];
            }
            persist(splitter, router, batch, now, created || due > applied);
            out.addAll(forwarded);
            return CollectionConverters.asScala(out.iterator());
        }

        /** Real-Time Mode: the state-transfer records among {@code controls}, as OUTPUT rows for their
         * worker (see {@link #OUTPUT}). */
        private static List<Row> forwarded(List<JsonNode> controls, TimerValues timerValues) {
            List<Row> out = new ArrayList<>();
            if (controls.isEmpty()) {
                return out; // every tuple's call: no watermark read, no timestamp built
            }
            // later than the watermark: Spark fails a row at it ("[EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED]
            // Previous node emitted a row with eventTime=<w * 1000> which is older than current_watermark_value=<w>",
            // a SHARED_STATE's transfer in a running real-time query, PySpark 4.3.0)
            Timestamp after = new Timestamp(Math.max(0L, timerValues.getCurrentWatermarkInMs()) + 1);
            for (JsonNode control : controls) {
                if (control.has("wake")) {
                    continue; // for the routers only (ChannelBarrier)
                }
                if (!control.has("worker")) {
                    throw new IllegalArgumentException("a state-transfer record names its worker, got " + control);
                }
                out.add(RowFactory.create(after, null, null, control.get("worker").asInt(), control.toString()));
            }
            return out;
        }

        /** The switch this batch must have applied: in a real-time query's live rescale, the channel's
         * ({@link ChannelBarrier}, which may wait at a barrier); the highest a control row names (live
         * rescale, at least {@code applied}); or the schedule's switch due by this micro-batch. */
        private int dueSwitch(int applied, List<JsonNode> controls) {
            if (rescale.channel != null) { // a control row (a wake, a transfer) reads the channel again
                String batchId = TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY);
                boolean fresh = !controls.isEmpty();
                if (fresh || !batchId.equals(channelBatch)) {
                    channelDue = ChannelBarrier.due(rescale.channel, Long.parseLong(batchId), fresh, rescale.handoff);
                    channelBatch = batchId;
                }
                return Math.max(applied, channelDue.switchNo());
            }
            if (rescale.live) {
                return Math.max(applied, controls.stream().mapToInt(c -> c.path("switch").asInt(0)).max().orElse(0));
            }
            return rescale.dueBy(realTime ? Long.MAX_VALUE
                    : Long.parseLong(TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY)));
        }

        /** Each tuple of {@code batch} with its worker, chosen by {@code router} at its clock {@code now[i]}
         * (and counted in {@code summary}, when there is one). */
        private static List<Row> route(Instance router, List<Row> batch, long[] now, RoutingSummary summary) {
            List<Row> out = new ArrayList<>(batch.size());
            for (int i = 0; i < batch.size(); i++) {
                Row row = batch.get(i);
                int worker = router.grouping.choose(row.getString(5), now[i]);
                if (summary != null) {
                    summary.add(worker, row.getString(5), row.getLong(6));
                }
                out.add(RowFactory.create(row.get(4), row.getString(5), row.getLong(6), worker, null));
            }
            return out;
        }

        /** Keeps the splitter's instance: its snapshot (micro-batch, a new instance, or one that has just
         * installed a routing, which a replay of the changelog would not install), else its batch's
         * tuples appended to the changelog; in Real-Time Mode it also stays in memory. */
        private void persist(Integer splitter, Instance router, List<Row> batch, long[] now, boolean snapshot) {
            if (!realTime || snapshot) {
                instance.update(save(router));
                if (realTime) {
                    changelog.clear();
                    logged.put(splitter, 0L);
                }
            } else {
                long position = logged.getOrDefault(splitter, 0L);
                for (int i = 0; i < batch.size(); i++) {
                    changelog.updateValue(position++, new Tuple2<>(batch.get(i).getString(5), now[i]));
                }
                logged.put(splitter, position);
            }
            if (realTime) {
                routers.put(splitter, router);
            }
        }

        /** Real-Time Mode: the tuples of {@link #changelog} routed again through {@code router}, restored
         * from its snapshot, in their order and with their clocks; the result is the new snapshot
         * (the changelog cleared) when there were any. */
        private void replayChangelog(Instance router) {
            List<Tuple2<Long, Tuple2<String, Long>>> routed = new ArrayList<>();
            changelog.iterator().foreach(routed::add);
            if (routed.isEmpty()) {
                return;
            }
            routed.sort(Comparator.comparingLong(Tuple2::_1));
            for (Tuple2<Long, Tuple2<String, Long>> entry : routed) {
                router.grouping.choose(entry._2()._1(), entry._2()._2());
                router.clockMs = entry._2()._2();
            }
            instance.update(save(router));
            changelog.clear();
        }

        /** Splitter {@code splitter}'s part of a hand-off with the HANDOFF steps of {@code controls} (the
         * channel's due steps, in Real-Time Mode) applied in epoch order, and stored when one was new. */
        private Handoff handoff(Integer splitter, List<JsonNode> controls) {
            Handoff handoff = handoffs != null ? handoffs.get(splitter) : null;
            if (handoff == null) {
                handoff = handoffState.exists() ? (Handoff) restore(handoffState.get()) : new Handoff();
            }
            if (realTime) {
                handoffs.put(splitter, handoff);
            }
            boolean changed = false;
            List<JsonNode> steps = new ArrayList<>(controls.stream().filter(c -> c.has(Handoff.CONTROL_KEY)).toList());
            steps.sort(Comparator.comparingLong(c -> c.path("epoch").asLong()));
            for (JsonNode step : steps) {
                changed |= handoff.apply(step.path("epoch").asLong(), step.get(Handoff.CONTROL_KEY));
            }
            if (changed) {
                handoffState.update(save(handoff));
            }
            return handoff;
        }

        /** The batch routed by {@link Handoff#route}, as output rows (no summary yet); the routing
         * summary gets the released tuples' hold batches ({@code released}), and the hand-off,
         * which held or released tuples, is stored. */
        private List<Row> handOver(Handoff handoff, OwnershipGrouping grouping, List<Row> batch, long[] now,
                                   TimerValues timerValues, RoutingSummary summary) {
            List<String> keys = new ArrayList<>(batch.size());
            List<Timestamp> eventTs = new ArrayList<>(batch.size());
            long[] counts = new long[batch.size()];
            for (int i = 0; i < counts.length; i++) {
                Row row = batch.get(i);
                eventTs.add(row.getAs(4));
                keys.add(row.getString(5));
                counts[i] = row.getLong(6);
            }
            long batchId = Long.parseLong(TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY));
            Handoff.Routed routed = handoff.route(grouping, keys, counts, eventTs, now, batchId,
                    timerValues.getCurrentWatermarkInMs());
            if (routed.changed()) {
                handoffState.update(save(handoff));
            }
            List<Row> out = new ArrayList<>(routed.tuples().size());
            for (Handoff.Sent t : routed.tuples()) {
                if (summary != null) {
                    summary.add(t.worker(), t.key(), t.count());
                }
                out.add(RowFactory.create(t.eventTs(), t.key(), t.count(), t.worker(), null));
            }
            if (summary != null) {
                summary.released(routed.released());
            }
            return out;
        }

        /** A control record, parsed: {@code "switch": k} for a live rescale's k-th switch, {@code "epoch"}
         * its rescale channel epoch, a HANDOFF step under {@link Handoff#CONTROL_KEY}. */
        private static JsonNode control(String record) {
            try {
                return JSON.readTree(record);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("unreadable control record " + record, e);
            }
        }

        /** Each tuple's clock, in routing order (grouping_stage.py's {@code clock_ms}). */
        private long[] clock(List<Row> batch, Long lastMs, long wallMs) {
            long[] now = new long[batch.size()];
            if (!kafkaClock) {
                Arrays.fill(now, lastMs == null ? wallMs : Math.max(wallMs, lastMs));
                return now;
            }
            long running = lastMs == null ? Long.MIN_VALUE : lastMs;
            for (int i = 0; i < now.length; i++) {
                running = Math.max(running, batch.get(i).<Timestamp>getAs(4).getTime());
                now[i] = running;
            }
            return now;
        }
    }

    static byte[] save(Serializable value) {
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
