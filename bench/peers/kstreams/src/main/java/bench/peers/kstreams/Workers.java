package bench.peers.kstreams;

import bench.peers.contract.PeerOutputs;
import bench.peers.contract.RescaleSchedule;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The workers: W KafkaStreams instances of one application ({@code application.id}) in this JVM,
 * instance i = worker i, each with one stream thread and its own {@code state.dir}, and the rescale
 * driver (protocol LEARNER, Kafka Streams' own scaling, KIP-441; classic rebalance protocol,
 * cooperative, default task assignor HighAvailabilityTaskAssignor).
 *
 * <p>Scale-out W -> W' starts instances W .. W'-1; their consumers join the group. The assignor
 * computes a balanced target (stateful tasks dealt round-robin over the clients sorted by process
 * id, so most units get a new target, not only the minimum), keeps each task active on a caught-up
 * client when its target is not caught up (lag above {@code acceptable.recovery.lag} offsets), gives
 * the target a warm-up task (a standby beyond {@code num.standby.replicas}, at most
 * {@code max.warmup.replicas} at once) that restores the store from its changelog while the old
 * owner keeps processing, and asks for a probing rebalance {@code probing.rebalance.interval.ms}
 * later (60000 ms at least). Every rebalance recomputes this from the lags the members report, so
 * the active task moves at the first rebalance after its warm-up caught up: the probing one, or an
 * earlier one (a member joining or leaving, or the immediate follow-up of a cooperative rebalance
 * that revoked tasks); a caught-up warm-up does not itself trigger one. With cooperative
 * rebalancing a move takes two rebalances: revoke, then assign. Scale-in closes the last instances
 * with {@link CloseOptions.GroupMembershipOperation#LEAVE_GROUP}; their tasks go to the others
 * (restored from the changelog, or from a state directory an instance still holds), with warm-ups
 * again where a target is not caught up.
 *
 * <p>An event is in force when every instance is RUNNING after a rebalance the event caused, every
 * unit is active on exactly one instance, no warm-up (standby) task is left and every instance
 * holds at least one unit: read with {@link KafkaStreams#metadataForLocalThreads()} every 20 ms.
 */
public final class Workers implements AutoCloseable {
    private static final long POLL_MS = 20;

    private final PeerOptions options;
    private final String applicationId;
    private final TupleParser parser;
    private final Progress progress;
    private final int statefulSubtopology;
    private final Map<Integer, KafkaStreams> instances = new TreeMap<>();
    private final List<long[]> rebalances = new CopyOnWriteArrayList<>(); // {wall ms, worker} on -> REBALANCING
    private final AtomicLong restored = new AtomicLong();
    private final AtomicLong warmUpLoaded = new AtomicLong();
    private final AtomicLong lastWarmUpBatchMs = new AtomicLong();
    private final AtomicLong lastRestoreBatchMs = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    /**
     * @param options the run's options
     * @param applicationId the Kafka Streams {@code application.id} of this run (prefix of its topics)
     * @param progress where every instance reports
     */
    public Workers(PeerOptions options, String applicationId, Progress progress) {
        this.options = options;
        this.applicationId = applicationId;
        this.parser = new TupleParser(options.keyField(), options.countField());
        this.progress = progress;
        this.statefulSubtopology = statefulSubtopology(RescaleTopology.build(options.topic(), parser,
                options.units(), 0, progress));
    }

    /** The id of the subtopology whose processor holds the store (the units are its tasks). */
    static int statefulSubtopology(Topology topology) {
        for (TopologyDescription.Subtopology s : topology.describe().subtopologies()) {
            for (TopologyDescription.Node n : s.nodes()) {
                if (n instanceof TopologyDescription.Processor p && p.stores().contains(RescaleTopology.STORE)) {
                    return s.id();
                }
            }
        }
        throw new IllegalStateException("no subtopology holds " + RescaleTopology.STORE);
    }

    /** The Kafka Streams settings every instance gets (the instance's own ones are added by {@link #start}). */
    public Map<String, Object> settings() {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        s.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, options.processingGuarantee());
        s.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        s.put(StreamsConfig.MAX_WARMUP_REPLICAS_CONFIG, options.maxWarmupReplicas());
        s.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, options.acceptableRecoveryLag());
        s.put(StreamsConfig.PROBING_REBALANCE_INTERVAL_MS_CONFIG, options.probingRebalanceIntervalMs());
        s.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, options.numStandbyReplicas());
        s.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, options.commitIntervalMs());
        return s;
    }

    /** Starts worker {@code index}: a KafkaStreams instance with state.dir {@code <out>/state/w<index>}. */
    public void start(int index) {
        Properties p = new Properties();
        p.putAll(settings());
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap());
        p.put(StreamsConfig.CLIENT_ID_CONFIG, applicationId + "-w" + index);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir(index).toString());
        KafkaStreams streams = new KafkaStreams(RescaleTopology.build(options.topic(), parser, options.units(),
                index, progress), p);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.REBALANCING) {
                rebalances.add(new long[] {System.currentTimeMillis(), index});
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            failure.compareAndSet(null, e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new RestoreCounter());
        streams.setStandbyUpdateListener(new WarmUpCounter());
        synchronized (instances) {
            instances.put(index, streams);
        }
        streams.start();
    }

    private Path stateDir(int index) {
        return Path.of(options.out(), "state", "w" + index).toAbsolutePath();
    }

    /** Changelog records restored by active tasks (new owners), in total. */
    private final class RestoreCounter implements StateRestoreListener {
        @Override
        public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            restored.addAndGet(n);
            lastRestoreBatchMs.set(System.currentTimeMillis());
        }

        @Override
        public void onRestoreEnd(TopicPartition tp, String store, long total) {}
    }

    /** Changelog records loaded by standby (warm-up) tasks, and when the last batch was loaded. */
    private final class WarmUpCounter implements StandbyUpdateListener {
        @Override
        public void onUpdateStart(TopicPartition tp, String store, long start) {}

        @Override
        public void onBatchLoaded(TopicPartition tp, String store, TaskId task, long batchEnd, long n, long end) {
            warmUpLoaded.addAndGet(n);
            lastWarmUpBatchMs.set(System.currentTimeMillis());
        }

        @Override
        public void onUpdateSuspended(TopicPartition tp, String store, long offset, long end, SuspendReason reason) {}
    }

    /** The active owner of every assigned unit and the warm-up tasks, at one instant. */
    record Assignment(Map<Integer, Integer> owner, int duplicates, Set<String> warmUps, Map<Integer, Integer> unitsPerWorker,
                      boolean allRunning) {}

    /** Reads every live instance's state and {@link KafkaStreams#metadataForLocalThreads()}. */
    Assignment assignment() {
        Map<Integer, Integer> owner = new TreeMap<>();
        Map<Integer, Integer> perWorker = new TreeMap<>();
        Set<String> warmUps = new TreeSet<>();
        int duplicates = 0;
        boolean running = true;
        for (Map.Entry<Integer, KafkaStreams> e : live().entrySet()) {
            running &= e.getValue().state() == KafkaStreams.State.RUNNING;
            perWorker.put(e.getKey(), 0);
            for (ThreadMetadata t : e.getValue().metadataForLocalThreads()) {
                for (TaskMetadata task : t.activeTasks()) {
                    if (task.taskId().subtopology() == statefulSubtopology) {
                        if (owner.put(task.taskId().partition(), e.getKey()) != null) {
                            duplicates++;
                        }
                        perWorker.merge(e.getKey(), 1, Integer::sum);
                    }
                }
                for (TaskMetadata task : t.standbyTasks()) {
                    warmUps.add(e.getKey() + ":" + task.taskId());
                }
            }
        }
        return new Assignment(owner, duplicates, warmUps, perWorker, running);
    }

    private boolean inForce(Assignment a) {
        return a.allRunning() && a.duplicates() == 0 && a.owner().size() == options.units() && a.warmUps().isEmpty()
                && (options.units() < a.unitsPerWorker().size() || !a.unitsPerWorker().containsValue(0));
    }

    private Map<Integer, KafkaStreams> live() {
        synchronized (instances) {
            return new TreeMap<>(instances);
        }
    }

    /** Live instance count. */
    public int size() {
        return live().size();
    }

    /**
     * Waits until every live instance is RUNNING with every unit assigned and no warm-up.
     *
     * @param deadlineMs wall epoch ms
     * @throws IllegalStateException on a failed instance or at the deadline
     */
    public void awaitInForce(long deadlineMs, String what) throws InterruptedException {
        while (!inForce(assignment())) {
            check(deadlineMs, what);
            Thread.sleep(POLL_MS);
        }
    }

    /** Throws if an instance failed or the deadline (wall epoch ms) passed. */
    public void check(long deadlineMs, String what) {
        Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("a Kafka Streams instance failed: " + t, t);
        }
        if (System.currentTimeMillis() > deadlineMs) {
            throw new IllegalStateException("timed out " + what);
        }
    }

    /**
     * Runs one rescale event: starts or closes instances, then polls until the new assignment is in
     * force, and measures it.
     *
     * @param event the event (its target worker count)
     * @param deadlineMs wall epoch ms to give up at
     * @return the event's result entry (the contract's fields plus warm-up and rebalance counts)
     * @throws IllegalStateException when an instance fails or the deadline passes first
     */
    public Map<String, Object> rescale(RescaleSchedule.Event event, long deadlineMs) throws InterruptedException {
        long prepare = System.currentTimeMillis();
        int from = size();
        int to = event.workers();
        Assignment before = assignment();
        long restoredBefore = restored.get();
        long loadedBefore = warmUpLoaded.get();
        int rebalancesBefore = rebalances.size();
        long request = System.currentTimeMillis();
        if (to == from) {
            return unchanged(event, to, request);
        }
        List<Thread> closing = startOrClose(from, to);
        // After the request, not before: reading every instance's metrics takes ~0.2 s here, and the
        // restore consumers fetch nothing until the group has rebalanced (seconds later).
        Map<String, Double> bytesBefore = restoreBytes();
        Watch watch = watchUntilInForce(rebalancesBefore, to, deadlineMs);
        long inForce = System.currentTimeMillis();
        for (Thread t : closing) {
            t.join();
        }
        Steps steps = steps(watch, request, inForce, rebalancesBefore);
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("at_ms", event.atMs());
        e.put("prepare_ms", request - prepare);
        e.put("from_workers", from);
        e.put("to_workers", to);
        e.put("request_wall_ms", request);
        e.put("in_force_wall_ms", inForce);
        e.put("moved_units", movedUnits(before, watch.now));
        e.put("steps_ms", steps.steps());
        long entries = restored.get() - restoredBefore + warmUpLoaded.get() - loadedBefore;
        e.put("state_entries_moved", entries);
        e.put("state_entries_restored_by_active", restored.get() - restoredBefore);
        e.put("state_entries_loaded_by_warm_ups", warmUpLoaded.get() - loadedBefore);
        e.put("state_bytes_moved", bytesMoved(bytesBefore));
        e.put("warm_up_tasks_max", watch.maxWarmUps);
        e.put("rebalances", rebalances.size() - rebalancesBefore);
        e.put("units_per_worker", watch.now.unitsPerWorker());
        e.put("switch_trigger", steps.trigger());
        e.put("notes", notes(to > from, watch.maxWarmUps, steps.trigger()));
        return e;
    }

    /** The result entry of an event that asks for the worker count already running. */
    private static Map<String, Object> unchanged(RescaleSchedule.Event event, int workers, long request) {
        Map<String, Object> same = new LinkedHashMap<>();
        same.put("at_ms", event.atMs());
        same.put("from_workers", workers);
        same.put("to_workers", workers);
        same.put("request_wall_ms", request);
        same.put("in_force_wall_ms", request);
        same.put("moved_units", List.of());
        same.put("steps_ms", Map.of());
        same.put("state_entries_moved", 0);
        same.put("state_bytes_moved", 0);
        same.put("notes", "no change: already " + workers + " workers");
        return same;
    }

    /** Starts instances from .. to-1 (scale-out), or closes to .. from-1 leaving the group, each in a
     * thread of its own (scale-in); returns those threads. */
    private List<Thread> startOrClose(int from, int to) {
        List<Thread> closing = new ArrayList<>();
        if (to > from) {
            for (int i = from; i < to; i++) {
                start(i);
            }
            return closing;
        }
        for (int i = from - 1; i >= to; i--) {
            KafkaStreams leaving;
            synchronized (instances) {
                leaving = instances.remove(i);
            }
            Thread t = new Thread(() -> leaving.close(CloseOptions.groupMembershipOperation(
                    CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(60))),
                    "close-w" + i);
            t.start();
            closing.add(t);
            closedInstances.put(i, leaving);
        }
        return closing;
    }

    /** What the polls of one rescale saw, wall epoch ms (null: not seen). */
    private static final class Watch {
        Long rebalanceDone;   // first poll: a rebalance seen, all RUNNING, every unit active
        Long firstWarmUp;     // first poll showing a warm-up task
        Long restoreDone;     // the last warm-up batch loaded before the warm-ups were gone
        int maxWarmUps;
        Assignment now;       // the assignment in force
    }

    /** Polls the assignment every {@value #POLL_MS} ms until the rescale to {@code to} workers is in force. */
    private Watch watchUntilInForce(int rebalancesBefore, int to, long deadlineMs) throws InterruptedException {
        Watch w = new Watch();
        while (true) {
            w.now = assignment();
            long t = System.currentTimeMillis();
            boolean rebalanced = rebalances.size() > rebalancesBefore;
            w.maxWarmUps = Math.max(w.maxWarmUps, w.now.warmUps().size());
            if (w.rebalanceDone == null && rebalanced && w.now.allRunning() && w.now.owner().size() == options.units()) {
                w.rebalanceDone = t;
            }
            if (w.firstWarmUp == null && !w.now.warmUps().isEmpty()) {
                w.firstWarmUp = t;
            }
            if (w.restoreDone == null && w.firstWarmUp != null && w.now.warmUps().isEmpty()) {
                w.restoreDone = Math.max(w.firstWarmUp, lastWarmUpBatchMs.get());
            }
            if (w.rebalanceDone != null && inForce(w.now)) {
                return w;
            }
            check(deadlineMs, "waiting for the rescale to " + to + " workers to be in force");
            Thread.sleep(POLL_MS);
        }
    }

    /** A rescale's steps (name -> ms) and what triggered its switch (null without warm-up tasks). */
    private record Steps(Map<String, Object> steps, String trigger) {}

    private Steps steps(Watch w, long request, long inForce, int rebalancesBefore) {
        Map<String, Object> steps = new LinkedHashMap<>();
        if (w.firstWarmUp == null || w.restoreDone == null) {
            steps.put("rebalance", w.rebalanceDone - request);
            long lastRestore = lastRestoreBatchMs.get();
            if (lastRestore > request) {
                steps.put("restore", lastRestore - request);
            }
            return new Steps(steps, null);
        }
        Long switchStart = null;
        for (long[] r : rebalances.subList(rebalancesBefore, rebalances.size())) {
            if (r[0] >= w.restoreDone) {
                switchStart = r[0];
                break;
            }
        }
        steps.put("warm_up_assigned", w.firstWarmUp - request);
        steps.put("warm_up_restore", w.restoreDone - w.firstWarmUp);
        if (switchStart == null) {
            steps.put("switch", inForce - w.restoreDone);
            return new Steps(steps, null);
        }
        steps.put("wait_for_rebalance", switchStart - w.restoreDone);
        steps.put("switch", inForce - switchStart);
        String trigger = switchStart - w.firstWarmUp >= options.probingRebalanceIntervalMs() - 1000
                ? "the probing rebalance" : "a rebalance before the probing one (a cooperative follow-up)";
        return new Steps(steps, trigger);
    }

    private List<Integer> movedUnits(Assignment before, Assignment now) {
        List<Integer> moved = new ArrayList<>();
        for (int unit = 0; unit < options.units(); unit++) {
            if (!now.owner().get(unit).equals(before.owner().get(unit))) {
                moved.add(unit);
            }
        }
        return moved;
    }

    /** Bytes the restore consumers fetched since {@code bytesBefore}; null when no instance reports them. */
    private Long bytesMoved(Map<String, Double> bytesBefore) {
        Map<String, Double> bytesAfter = restoreBytes();
        double bytes = 0;
        for (Map.Entry<String, Double> b : bytesAfter.entrySet()) {
            bytes += b.getValue() - bytesBefore.getOrDefault(b.getKey(), 0.0);
        }
        return bytesAfter.isEmpty() ? null : Math.round(bytes);
    }

    private final Map<Integer, KafkaStreams> closedInstances = new TreeMap<>();

    private String notes(boolean out, int warmUps, String trigger) {
        String entries = "state_entries_moved: changelog records restored by new active owners (StateRestoreListener) "
                + "plus records loaded by warm-up tasks (StandbyUpdateListener), from request to in force; a unit "
                + "that returns to an instance still holding its state directory (a task's directory stays "
                + "state.cleanup.delay.ms = 10 min after it moved away) restores only the missing tail. ";
        String bytes = "state_bytes_moved: bytes fetched by the instances' restore consumers (metric "
                + "consumer-fetch-manager-metrics bytes-consumed-total of the *-restore-consumer clients), "
                + "i.e. changelog record batches as fetched. ";
        String how = out ? "scale-out: new instances started and joined the group. "
                : "scale-in: the last instances closed and left the group (CloseOptions LEAVE_GROUP). ";
        String steps = trigger != null
                ? warmUps + " warm-up task(s) at most. steps: warm_up_assigned = request -> first warm-up task seen; "
                + "warm_up_restore -> last warm-up batch loaded; wait_for_rebalance -> the next rebalance, here "
                + trigger + "; switch -> in force (cooperative: revoke, then assign in a second rebalance)."
                : (warmUps > 0 ? warmUps + " warm-up task(s) at most. " : "no warm-up task. ")
                + "steps: rebalance = request -> every instance RUNNING with every unit active; restore = request "
                + "-> last changelog batch restored by a new active owner (absent: nothing restored).";
        return how + entries + bytes + steps;
    }

    /** restore-consumer bytes-consumed-total per client id, over the live instances. */
    private Map<String, Double> restoreBytes() {
        Map<String, Double> out = new HashMap<>();
        for (KafkaStreams s : live().values()) {
            for (Map.Entry<MetricName, ? extends Metric> m : s.metrics().entrySet()) {
                MetricName n = m.getKey();
                String client = n.tags().get("client-id");
                if (n.group().equals("consumer-fetch-manager-metrics") && n.name().equals("bytes-consumed-total")
                        && !n.tags().containsKey("topic") && client != null && client.endsWith("restore-consumer")) {
                    Object v = m.getValue().metricValue();
                    if (v instanceof Number num) {
                        out.put(client, num.doubleValue());
                    }
                }
            }
        }
        return out;
    }

    /**
     * The final state, read with interactive queries: for every live instance and every unit it
     * holds active, {@code store(fromNameAndType(key-state, keyValueStore()).withPartition(unit)).all()}.
     *
     * @return rows (key, worker, unit, state), one per key
     * @throws IllegalStateException when a store cannot be queried by the deadline (wall epoch ms)
     */
    public List<StateRow> readState(long deadlineMs) throws InterruptedException {
        while (true) {
            try {
                List<StateRow> rows = new ArrayList<>();
                Assignment a = assignment();
                for (Map.Entry<Integer, Integer> unit : a.owner().entrySet()) {
                    KafkaStreams s = live().get(unit.getValue());
                    ReadOnlyKeyValueStore<String, KeyState> store = s.store(StoreQueryParameters
                            .fromNameAndType(RescaleTopology.STORE, QueryableStoreTypes.<String, KeyState>keyValueStore())
                            .withPartition(unit.getKey()));
                    try (KeyValueIterator<String, KeyState> it = store.all()) {
                        while (it.hasNext()) {
                            KeyValue<String, KeyState> kv = it.next();
                            rows.add(new StateRow(kv.key, unit.getValue(), unit.getKey(), kv.value));
                        }
                    }
                }
                rows.sort(Comparator.comparing(StateRow::key));
                return rows;
            } catch (org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                check(deadlineMs, "querying the final state: " + e.getMessage());
                Thread.sleep(100);
            }
        }
    }

    /**
     * One key's final state.
     *
     * @param key the key
     * @param worker the instance holding it
     * @param unit the repartition partition (task) holding it
     * @param state its state
     */
    public record StateRow(String key, int worker, int unit, KeyState state) {
        /** This row as the peers' state.csv row. */
        public PeerOutputs.StateRow contractRow() {
            return new PeerOutputs.StateRow(key, worker, unit, state.count(), state.sum(), state.firstTsMs(),
                    state.lastTsMs());
        }
    }

    /**
     * Closes every instance (leaving the group, 30 s timeout each, in parallel), wipes its local
     * state ({@link KafkaStreams#cleanUp()}) and deletes {@code <out>/state}. The internal topics go
     * with {@link #deleteInternalTopics()}.
     */
    @Override
    public void close() {
        List<Thread> threads = new ArrayList<>();
        Map<Integer, KafkaStreams> all = live();
        synchronized (instances) {
            instances.clear();
        }
        all.putAll(closedInstances);
        for (KafkaStreams s : all.values()) {
            Thread t = new Thread(() -> {
                s.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(30)));
                try {
                    s.cleanUp();
                } catch (RuntimeException e) {
                    // cleanUp refuses while an instance is not fully closed; the directory is deleted below
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            try {
                t.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        deleteTree(Path.of(options.out(), "state"));
    }

    /**
     * Deletes the topics whose names start with {@code application.id + "-"} (the repartition and
     * changelog topics Kafka Streams created for this run) and the run's consumer group (named by
     * the {@code application.id}; best effort: a group the broker still sees as not empty stays).
     * Call after {@link #close()}.
     *
     * @return the deleted topic names
     * @throws Exception when the topics cannot be listed or deleted
     */
    public Set<String> deleteInternalTopics() throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap());
        try (Admin admin = Admin.create(p)) {
            Set<String> ours = new HashSet<>();
            for (String t : admin.listTopics().names().get()) {
                if (t.startsWith(applicationId + "-")) {
                    ours.add(t);
                }
            }
            if (!ours.isEmpty()) {
                admin.deleteTopics(ours).all().get();
            }
            try {
                admin.deleteConsumerGroups(List.of(applicationId)).all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                // the group may already be gone, or not yet empty: it holds no data
            }
            return ours;
        }
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
