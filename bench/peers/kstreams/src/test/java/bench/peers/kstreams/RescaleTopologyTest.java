package bench.peers.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bench.peers.contract.PeerOutputs.TraceRow;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;

/** The topology on Kafka Streams' own TopologyTestDriver (no broker). */
class RescaleTopologyTest {
    private static final String TOPIC = "in";

    private static Properties props() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstreams-peer-test");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        return p;
    }

    private static void send(TestInputTopic<byte[], byte[]> in, String json, long ts, Long releaseMs) {
        RecordHeaders h = new RecordHeaders();
        if (releaseMs != null) {
            h.add("release_ms", releaseMs.toString().getBytes(StandardCharsets.US_ASCII));
        }
        in.pipeInput(new TestRecord<>(null, json == null ? null : json.getBytes(StandardCharsets.UTF_8), h, ts));
    }

    @Test
    void perKeyStateIsExactAndMalformedRecordsAreCountedAndDropped() {
        Progress progress = new Progress();
        Topology topology = RescaleTopology.build(TOPIC, new TupleParser("dest", "n"), 128, 7, progress);
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props())) {
            TestInputTopic<byte[], byte[]> in = driver.createInputTopic(TOPIC, new ByteArraySerializer(), new ByteArraySerializer());
            send(in, "{\"dest\":\"IAH\",\"n\":2}", 1000, 5000L);
            send(in, "{\"dest\":\"ORD\",\"n\":5}", 1200, null);
            send(in, "{\"dest\":\"IAH\",\"n\":3}", 900, 5100L);    // earlier timestamp: first_ts moves back
            send(in, "{\"dest\":\"IAH\",\"n\":1}", 1500, null);
            send(in, "not json", 1600, null);                       // not JSON
            send(in, "[1,2]", 1600, null);                          // not an object
            send(in, "{\"dest\":null,\"n\":1}", 1600, null);        // null key
            send(in, "{\"dest\":12,\"n\":1}", 1600, null);          // key not a string
            send(in, "{\"origin\":\"EWR\",\"n\":1}", 1600, null);   // key missing
            send(in, "{\"dest\":\"ORD\",\"n\":1.5}", 1600, null);   // count not an integer
            send(in, null, 1600, null);                              // no value
            KeyValueStore<String, KeyState> store = driver.getKeyValueStore(RescaleTopology.STORE);
            assertEquals(new KeyState(3, 6, 900, 1500), store.get("IAH"));
            assertEquals(new KeyState(1, 5, 1200, 1200), store.get("ORD"));
            assertNull(store.get("EWR"));
            assertEquals(11, progress.recordsRead());
            assertEquals(7, progress.malformed());
            assertEquals(4, progress.tuplesProcessed());
            Map<String, Long> countByKey = new HashMap<>();
            int withRelease = 0;
            for (TraceRow r : progress.trace()) {
                countByKey.merge(r.key(), 1L, Long::sum);
                assertEquals(7, r.worker());
                if (r.releaseMs() != null) {
                    withRelease++;
                    assertTrue(r.releaseMs() == 5000L || r.releaseMs() == 5100L);
                }
            }
            assertEquals(Map.of("IAH", 3L, "ORD", 1L), countByKey);
            assertEquals(2, withRelease);
        }
    }

    @Test
    void countIsOneWithoutCountField() {
        Progress progress = new Progress();
        try (TopologyTestDriver driver = new TopologyTestDriver(
                RescaleTopology.build(TOPIC, new TupleParser("dest", null), 16, 0, progress), props())) {
            TestInputTopic<byte[], byte[]> in = driver.createInputTopic(TOPIC, new ByteArraySerializer(), new ByteArraySerializer());
            send(in, "{\"dest\":\"IAH\",\"distance\":1400}", 10, null);
            send(in, "{\"dest\":\"IAH\",\"distance\":1400}", 20, null);
            assertEquals(new KeyState(2, 2, 10, 20), driver.<String, KeyState>getKeyValueStore(RescaleTopology.STORE).get("IAH"));
        }
    }

    @Test
    void storeIsPersistentWithChangelogLoggingAndUnitsAreTheRepartitionPartitions() {
        Topology topology = RescaleTopology.build(TOPIC, new TupleParser("dest", null), 128, 0, new Progress());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props())) {
            var store = driver.getKeyValueStore(RescaleTopology.STORE);
            assertTrue(store.persistent(), "RocksDB store expected");
            send(driver.createInputTopic(TOPIC, new ByteArraySerializer(), new ByteArraySerializer()), "{\"dest\":\"IAH\"}", 10, null);
            assertTrue(driver.producedTopicNames().contains("kstreams-peer-test-by-key-repartition"),
                    "repartition topic: " + driver.producedTopicNames());
        }
        String described = topology.describe().toString();
        assertTrue(described.contains("stores: [key-state]"), described);
        assertEquals(1, Workers.statefulSubtopology(topology));
    }

    @Test
    void storeWritesItsChangelog() {
        try (TopologyTestDriver driver = new TopologyTestDriver(
                RescaleTopology.build(TOPIC, new TupleParser("dest", null), 128, 0, new Progress()), props())) {
            TestInputTopic<byte[], byte[]> in = driver.createInputTopic(TOPIC, new ByteArraySerializer(), new ByteArraySerializer());
            send(in, "{\"dest\":\"IAH\"}", 10, null);
            assertTrue(driver.producedTopicNames().contains("kstreams-peer-test-key-state-changelog"),
                    "changelog topic expected among " + driver.producedTopicNames());
            var changelog = driver.createOutputTopic("kstreams-peer-test-key-state-changelog",
                    new org.apache.kafka.common.serialization.StringDeserializer(), KeyState.serde().deserializer());
            assertEquals(new KeyState(1, 1, 10, 10), changelog.readKeyValue().value);
        }
    }

    @Test
    void unitIsTheDefaultPartitionersPartition() {
        StringSerializer s = new StringSerializer();
        for (String key : new String[] {"IAH", "ORD", "ATL", "", "Zürich", "K000"}) {
            for (int units : new int[] {1, 10, 64, 128}) {
                assertEquals(BuiltInPartitioner.partitionForKey(s.serialize(null, key), units), RescaleTopology.unitOf(key, units), key);
            }
        }
        // murmur2 vector: Kafka's Utils.murmur2("IAH") is fixed; the unit must stay in range
        assertTrue(RescaleTopology.unitOf("IAH", 128) >= 0 && RescaleTopology.unitOf("IAH", 128) < 128);
    }
}
