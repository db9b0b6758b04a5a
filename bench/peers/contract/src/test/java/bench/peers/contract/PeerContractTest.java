package bench.peers.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line's pairs and the files a peer leaves for its driver. */
class PeerContractTest {
    @Test
    void readsPairsOfTheCommonAndThePeersOwnOptions() {
        PeerArguments a = PeerArguments.parse(new String[] {"--topic", "t", "--records", " 12 ", "--units", "7"},
                Set.of("units"));
        assertEquals("t", a.required("topic"));
        assertEquals(12, a.number("records", null));
        assertEquals(7, a.number("units", 128L));
        assertEquals(10, a.number("workers", 10L));
        assertEquals("dest", a.text("key-field", "dest"));
        assertThrows(IllegalArgumentException.class, () -> a.required("bootstrap"));
        assertThrows(IllegalArgumentException.class, () -> a.number("t0-ms", null));
    }

    @Test
    void refusesWhatIsNoPair() {
        for (String[] argv : List.of(new String[] {"--colour", "blue"}, new String[] {"--topic"},
                new String[] {"topic", "t"}, new String[] {"--units", "7"})) {
            assertThrows(IllegalArgumentException.class, () -> PeerArguments.parse(argv, Set.of()), String.join(" ", argv));
        }
        PeerArguments bad = PeerArguments.parse(new String[] {"--records", "many"}, Set.of());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bad.number("records", 1L));
        assertEquals("--records must be an integer, not 'many'", e.getMessage());
    }

    @Test
    void writesTheFilesTheDriverReads(@TempDir Path out) throws IOException {
        PeerOutputs.writeTrace(out, List.of(new PeerOutputs.TraceRow("a,b", 3, 1, null, 20),
                new PeerOutputs.TraceRow("IAH", 4, 2, 15L, 21)));
        PeerOutputs.writeState(out, List.of(new PeerOutputs.StateRow("say \"hi\"", 1, 3, 2, 5, 100, 200)));
        PeerOutputs.writeResult(out, Map.of("ok", true));
        assertEquals(List.of("key,unit,worker,release_ms,processed_ms", "\"a,b\",3,1,,20", "IAH,4,2,15,21"),
                Files.readAllLines(out.resolve("trace.csv")));
        assertEquals(List.of("key,worker,unit,count,sum,first_ts_ms,last_ts_ms", "\"say \"\"hi\"\"\",1,3,2,5,100,200"),
                Files.readAllLines(out.resolve("state.csv")));
        assertTrue(Files.readString(out.resolve("result.json")).contains("\"ok\" : true"));
    }
}
