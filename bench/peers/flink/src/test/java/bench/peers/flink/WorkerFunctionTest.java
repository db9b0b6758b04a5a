package bench.peers.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.StreamFlatMap;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The worker's keyed state and the parser, with Flink's operator test harnesses (no cluster). */
class WorkerFunctionTest {
    private static final int MAX_P = 128;

    @BeforeEach
    void reset() {
        Progress.reset();
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, Records.Tuple, Records.StateRow> worker(
            int parallelism, int subtask) throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(new WorkerFunction()),
                new WorkerFunction.TupleKey(), Types.STRING, MAX_P, parallelism, subtask);
    }

    @Test
    void keepsCountSumFirstAndLastPerKey() throws Exception {
        try (var h = worker(1, 0)) {
            h.open();
            h.processElement(new Records.Tuple(1, "IAH", 2, 1_000, -1), 0);
            h.processElement(new Records.Tuple(2, "BOS", 1, 1_500, 7), 0);
            h.processElement(new Records.Tuple(3, "IAH", 5, 900, -1), 0);   // out of Kafka-time order
            h.processElement(new Records.Tuple(4, "IAH", 1, 2_000, -1), 0);
            List<Records.StateRow> out = h.extractOutputValues();
            Records.StateRow iah = out.get(3);
            assertEquals("IAH", iah.key);
            assertEquals(3, iah.count);
            assertEquals(8, iah.sum);
            assertEquals(900, iah.firstTsMs);
            assertEquals(2_000, iah.lastTsMs);
            assertEquals(KeyGroups.unit("IAH", MAX_P), iah.unit);
            assertEquals(0, iah.worker);
            Records.StateRow bos = out.get(1);
            assertEquals(1, bos.count);
            assertEquals(1_500, bos.firstTsMs);
            assertEquals(1_500, bos.lastTsMs);
            assertEquals(2, h.numKeyedStateEntries());
            assertEquals(4, Progress.processed());
            assertEquals(7L, Progress.TRACE.get(2L).releaseMs().longValue());
            // The same record processed again (a replay after a restart from a checkpoint) is one tuple,
            // traced at its last processing.
            h.processElement(new Records.Tuple(4, "IAH", 1, 2_000, 9), 0);
            assertEquals(4, Progress.processed());
            assertEquals(5, Progress.PROCESSINGS.get());
            assertEquals(9L, Progress.TRACE.get(4L).releaseMs().longValue());
        }
    }

    @Test
    void stateSurvivesASnapshotRestoredAtAnotherParallelism() throws Exception {
        List<String> keys = List.of("Turkey", "Germany", "Afghanistan", "Zimbabwe", "ElectionDay", "K000");
        OperatorSubtaskState snapshot;
        try (var h = worker(1, 0)) {
            h.open();
            for (int i = 0; i < keys.size(); i++) {
                h.processElement(new Records.Tuple(i, keys.get(i), 3, 10, -1), 0);
            }
            snapshot = h.snapshot(1, 1);
        }
        // Restore at 3 subtasks: each gets the key groups of its range, and only those.
        int restored = 0;
        for (int subtask = 0; subtask < 3; subtask++) {
            try (var h = worker(3, subtask)) {
                h.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(snapshot, MAX_P, 1, 3, subtask));
                h.open();
                int mine = subtask;
                List<String> owned = keys.stream()
                        .filter(k -> KeyGroups.owner(KeyGroups.unit(k, MAX_P), MAX_P, 3) == mine).toList();
                assertEquals(owned.size(), h.numKeyedStateEntries());
                for (String k : owned) {
                    h.processElement(new Records.Tuple(100 + keys.indexOf(k), k, 1, 20, -1), 0);
                }
                for (Records.StateRow r : h.extractOutputValues()) {
                    assertEquals(2, r.count);
                    assertEquals(4, r.sum);
                    assertEquals(10, r.firstTsMs);
                    assertEquals(20, r.lastTsMs);
                    assertEquals(subtask, r.worker);
                }
                restored += owned.size();
            }
        }
        assertEquals(keys.size(), restored);
    }

    @Test
    void malformedRecordsAreCountedAndDropped() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<>(new StreamFlatMap<>(new ParseFunction("dest", null)))) {
            h.open();
            h.processElement(raw("{\"dest\":\"IAH\",\"flight\":1545}", 5), 0);
            h.processElement(raw("not json", 6), 0);
            h.processElement(raw("[\"dest\"]", 7), 0);
            h.processElement(raw("{\"origin\":\"EWR\"}", 8), 0);
            h.processElement(raw("{\"dest\":null}", 9), 0);
            h.processElement(raw("{\"dest\":42}", 10), 0);
            h.processElement(raw(null, 11), 0);
            h.processElement(raw("{\"dest\":\"\"}", 12), 0);
            List<Records.Tuple> out = h.extractOutputValues();
            assertEquals(List.of("IAH", ""), out.stream().map(t -> t.key).toList());
            assertEquals(1, out.get(0).count);
            assertEquals(5, out.get(0).tsMs);
            assertEquals(6, Progress.malformed());
        }
    }

    @Test
    void countFieldMustBeAnInteger() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<>(new StreamFlatMap<>(new ParseFunction("k", "n")))) {
            h.open();
            h.processElement(raw("{\"k\":\"a\",\"n\":4}", 1), 0);
            h.processElement(raw("{\"k\":\"a\",\"n\":1.5}", 2), 0);
            h.processElement(raw("{\"k\":\"a\",\"n\":\"4\"}", 3), 0);
            h.processElement(raw("{\"k\":\"a\"}", 4), 0);
            Map<String, Long> sums = h.extractOutputValues().stream()
                    .collect(Collectors.groupingBy(t -> t.key, Collectors.summingLong(t -> t.count)));
            assertEquals(Map.of("a", 4L), sums);
            assertEquals(3, Progress.malformed());
        }
    }

    @Test
    void releaseHeaderIsParsedOrUnknown() {
        var headers = new org.apache.kafka.common.header.internals.RecordHeaders();
        assertEquals(-1, RecordDeserializer.releaseMs(headers.lastHeader(RecordDeserializer.RELEASE_HEADER)));
        headers.add(RecordDeserializer.RELEASE_HEADER, "1795760100435".getBytes());
        assertEquals(1795760100435L, RecordDeserializer.releaseMs(headers.lastHeader(RecordDeserializer.RELEASE_HEADER)));
        headers.add(RecordDeserializer.RELEASE_HEADER, "soon".getBytes());
        assertEquals(-1, RecordDeserializer.releaseMs(headers.lastHeader(RecordDeserializer.RELEASE_HEADER)));
        assertNull(new Records.Raw().value);
    }

    /** A record whose id is its timestamp (distinct in each test). */
    private static Records.Raw raw(String v, long ts) {
        return new Records.Raw(ts, v, ts, -1);
    }
}
