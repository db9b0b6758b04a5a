package bench.peers.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The schedule and option parser. */
class PeerOptionsTest {
    @Test
    void parsesTheHarnessScheduleSyntax() {
        assertEquals(List.of(new PeerOptions.Event(2499, 12)), PeerOptions.parseSchedule("2499ms:12"));
        assertEquals(List.of(new PeerOptions.Event(2499, 12), new PeerOptions.Event(3749, 10)),
                PeerOptions.parseSchedule("2499ms:12,3749ms:10"));
        assertEquals(List.of(new PeerOptions.Event(2500, 12), new PeerOptions.Event(3750, 3)),
                PeerOptions.parseSchedule(" 2.5s:12 , 3.75s:3"));
        assertTrue(PeerOptions.parseSchedule("").isEmpty());
        assertTrue(PeerOptions.parseSchedule(null).isEmpty());
    }

    @Test
    void rejectsBadSchedules() {
        for (String bad : new String[] {"2499:12", "2499ms", "ms:12", "2499ms:0", "2499ms:12,", "2499min:12",
                "2499ms:-1", "3s:12,2s:10", "2499ms:12;3749ms:10", "x"}) {
            assertThrows(IllegalArgumentException.class, () -> PeerOptions.parseSchedule(bad), bad);
        }
    }

    @Test
    void parsesOptionsWithDefaultsAndKafkaNames() {
        PeerOptions o = PeerOptions.parse(new String[] {"--bootstrap", "127.0.0.1:9092", "--topic", "t", "--records", "10000",
                "--t0-ms", "1795760100435", "--out", "/tmp/x", "--rescale", "2499ms:12", "--acceptable.recovery.lag", "5"});
        assertEquals("dest", o.keyField());
        assertEquals(null, o.countField());
        assertEquals(10, o.workers());
        assertEquals(128, o.units());
        assertEquals(5, o.acceptableRecoveryLag());
        assertEquals(60000, o.probingRebalanceIntervalMs());
        assertEquals(0, o.numStandbyReplicas());
        assertEquals(300, o.timeoutS());
        assertEquals(List.of(new PeerOptions.Event(2499, 12)), o.events());
    }

    @Test
    void rejectsBadOptions() {
        String[] base = {"--bootstrap", "b", "--topic", "t", "--records", "10", "--t0-ms", "0", "--out", "/tmp/x"};
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(new String[] {"--topic", "t"}));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--nope", "1")));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--records", "ten")));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--protocol", "STOP_THE_WORLD")));
        PeerOptions.parse(concat(base, "--protocol", "LEARNER"));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--workers", "0")));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--rescale", "12:2499ms")));
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(concat(base, "--workers")));
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
