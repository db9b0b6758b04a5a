package bench.peers.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import bench.peers.contract.PeerOutputs;
import org.junit.jupiter.api.Test;

/** The per-key state and its serde. */
class KeyStateTest {
    @Test
    void addsTuplesAndRoundTrips() {
        KeyState s = KeyState.first(2, 100).plus(3, 50).plus(1, 300);
        assertEquals(new KeyState(3, 6, 50, 300), s);
        var serde = KeyState.serde();
        byte[] bytes = serde.serializer().serialize("t", s);
        assertEquals(32, bytes.length);
        assertEquals(s, serde.deserializer().deserialize("t", bytes));
        assertNull(serde.deserializer().deserialize("t", null));
    }

    @Test
    void csvQuotesOnlyWhenNeeded() {
        assertEquals("IAH", PeerOutputs.csv("IAH"));
        assertEquals("\"a,b\"", PeerOutputs.csv("a,b"));
        assertEquals("\"a\"\"b\"", PeerOutputs.csv("a\"b"));
    }
}
