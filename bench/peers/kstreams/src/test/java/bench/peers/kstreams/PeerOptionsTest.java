package bench.peers.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bench.peers.contract.RescaleSchedule;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The option parser (the schedule's syntax: the contract's RescaleScheduleTest). */
class PeerOptionsTest {
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
        assertEquals(List.of(new RescaleSchedule.Event(2499, 12)), o.events());
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
