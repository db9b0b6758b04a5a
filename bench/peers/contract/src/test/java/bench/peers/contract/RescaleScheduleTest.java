package bench.peers.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The harness's schedule syntax, as every peer reads it. */
class RescaleScheduleTest {
    @Test
    void parsesEventsWithUnits() {
        assertEquals(List.of(new RescaleSchedule.Event(2499, 12), new RescaleSchedule.Event(3749, 10)),
                RescaleSchedule.parse("2499ms:12,3749ms:10"));
        assertEquals(List.of(new RescaleSchedule.Event(150_000, 12), new RescaleSchedule.Event(240_000, 8),
                new RescaleSchedule.Event(300_000, 3)), RescaleSchedule.parse(" 150s:12, 240:8 ,5m:3"));
        assertEquals(List.of(new RescaleSchedule.Event(2500, 12), new RescaleSchedule.Event(3750, 3)),
                RescaleSchedule.parse(" 2.5s:12 , 3.75s:3"));
        assertTrue(RescaleSchedule.parse("").isEmpty());
        assertTrue(RescaleSchedule.parse(null).isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"12", "2499ms", "2499ms:", "2499h:12", "2499min:12", "-5s:3", "1s:0", "1s:x", "1s:+10",
        "2s:4,1s:5", "1s:4,1s:5", "1s:4,", ",1s:4", "2499ms:12;3749ms:10", "x", "ms:12"})
    void rejectsBadSchedules(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RescaleSchedule.parse(text));
        assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }
}
