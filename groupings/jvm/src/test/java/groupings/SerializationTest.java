package groupings;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A grouping saved and restored between micro-batches (Java serialization, as a JVM stage keeps it
 * in Spark's state store) routes on exactly as the one that was never saved: the golden stream's
 * full trace, with every instance replaced by its restored copy every {@value #BATCH} tuples.
 */
class SerializationTest {
    /** Tuples between two saves: prime, so that the saves fall at every phase of DYNAMIC_KEY's cycles. */
    static final int BATCH = 997;

    @SuppressWarnings("unchecked")
    static <T> T restored(T instance) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(instance);
            }
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
                return (T) in.readObject();
            }
        } catch (IOException | ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest(name = "{0} n={1} S={2}")
    @CsvSource({"SHUFFLE, 10, 2", "KEY, 10, 2", "PARTIAL_KEY, 10, 2", "DYNAMIC_KEY, 5, 1", "DYNAMIC_KEY, 10, 10",
        "D_CHOICES, 10, 2", "D_CHOICES, 5, 1", "W_CHOICES, 10, 2", "KEY_GROUP, 10, 2", "VNODE, 10, 2"})
    void routesAsIfNeverSaved(String grouping, int n, int sources) {
        GoldenStream.Routed never = GoldenStream.run(grouping, n, sources, GoldenStream.COUNT);
        List<ReferenceGrouping> instances = new ArrayList<>();
        for (int s = 0; s < sources; s++) {
            instances.add(Groupings.create(grouping, n, GoldenStream.T0));
        }
        int[] tasks = new int[GoldenStream.COUNT];
        for (int i = 0; i < GoldenStream.COUNT; i++) {
            if (i % BATCH == 0) {
                instances.replaceAll(SerializationTest::restored);
            }
            tasks[i] = instances.get(i % sources)
                    .choose(GoldenStream.key(i, GoldenStream.SKEW), GoldenStream.nowMs(i, GoldenStream.RATE));
        }
        assertArrayEquals(never.tasks, tasks);
    }

    @Test
    void aRestoredKeySpaceIteratesInTheSavedOrderAfterItsTablesGrewAndWereRefilled() {
        // 300 baby keys grow baby's table from 64 (babyMax 50) to 512; the cycle keeps the top 50
        // in that table. A map rebuilt for 50 entries would have 128 buckets and another order: Java's
        // own HashMap serialization fails this test, while the golden traces above do not catch it
        // (no tie their reordering breaks changes a routing there).
        KeySpace space = new KeySpace(100);
        for (int k = 0; k < 300; k++) {
            for (int c = 0; c <= k % 7; c++) {
                space.record("key-" + k);
            }
        }
        space.promoteToTeenageSpace();
        for (int k = 300; k < 340; k++) {
            space.record("key-" + k);
        }
        KeySpace copy = restored(space);
        assertEquals(space.babyItems(), copy.babyItems());
        assertEquals(space.teenItems(), copy.teenItems());
        space.promoteToTeenageSpace();
        copy.promoteToTeenageSpace();
        space.promoteToOldSpace();
        copy.promoteToOldSpace();
        assertEquals(space.oldItems(), copy.oldItems());
        assertEquals(space.teenItems(), copy.teenItems());
        assertEquals(space.babyItems(), copy.babyItems());
    }
}
