package bench.peers.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bench.peers.contract.RescaleSchedule;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The command line (the schedule's syntax: the contract's RescaleScheduleTest). */
class PeerOptionsTest {
    @Test
    void parsesTheCommandLine() {
        PeerOptions o = PeerOptions.parse(("--bootstrap 127.0.0.1:9092 --topic t --records 10000 --key-field dest "
                + "--workers 10 --rescale 2499ms:12,3749ms:10 --t0-ms 1795760100435 --out /tmp/x").split(" "));
        assertEquals(10_000, o.records());
        assertEquals(12, o.maxWorkers());
        assertEquals(128, o.maxParallelism());
        assertEquals(1795760100435L, o.t0Ms());
        assertEquals(300, o.timeoutS());
        assertEquals(null, o.countField());
        assertEquals("STOP_THE_WORLD", o.protocol());
        assertEquals(0, o.checkpointIntervalMs(), "a savepoint is STOP_THE_WORLD's only snapshot");
        PeerOptions adaptive = PeerOptions.parse("--bootstrap b --topic t --records 1 --out /tmp/x --protocol adaptive_rescale"
                .split(" "));
        assertEquals("ADAPTIVE_RESCALE", adaptive.protocol());
        assertEquals(1000, adaptive.checkpointIntervalMs(), "the adaptive scheduler restarts from a checkpoint");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "--topic t --records 1 --out /tmp/x",                                        // no bootstrap
        "--bootstrap b --topic t --records many --out /tmp/x",                        // not a number
        "--bootstrap b --topic t --records 1 --out /tmp/x --rescale 1s:3",            // schedule without t0
        "--bootstrap b --topic t --records 1 --out /tmp/x --workers 200",             // above max parallelism
        "--bootstrap b --topic t --records 1 --out /tmp/x --colour blue",             // unknown option
        "--bootstrap b --topic t --records 1 --out /tmp/x --protocol HANDOFF",        // not a Flink protocol
        "--bootstrap b --topic t --records 1 --out /tmp/x --protocol ADAPTIVE_RESCALE --checkpoint-interval-ms 0",
        "--bootstrap b --topic t --records 1 --out",                                  // no value
    })
    void rejectsBadCommandLines(String line) {
        assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(line.split(" ")));
    }
}
