package groupings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.clearspring.analytics.stream.Counter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * D_CHOICES and W_CHOICES against the authors' code: tests/groupings/slb_oracle/vectors.json.gz holds
 * what SLBStorm's rules (SlbTrace.java, on stream-lib and Guava) routed, tuple by tuple, and their
 * summary's final topK, the vectors tests/groupings/test_slb.py checks the Python port against.
 * The cases with SLB's default T = 10 (the Java port's only one).
 */
class SlbOracleTest {
    static Stream<Arguments> cases() throws Exception {
        JsonNode oracle;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(Path.of(System.getProperty("slb.oracle"))))) {
            oracle = new ObjectMapper().readTree(in);
        }
        List<Arguments> cases = new ArrayList<>();
        for (JsonNode c : oracle.get("cases")) {
            if (c.get("t").asInt() == SlbGrouping.T && c.get("epsilon").asDouble() == DChoicesGrouping.EPSILON) {
                cases.add(Arguments.of(c.get("grouping").asText(), c.get("workers").asInt(), c.get("stream").asText(),
                        oracle.get("streams").get(c.get("stream").asText()), c.get("tasks"), c.get("top_k")));
            }
        }
        assertTrue(cases.size() >= 12, "the oracle's T = 10 cases");
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} n={1} {2}")
    @MethodSource("cases")
    void routesAsTheAuthorsCode(String grouping, int n, String stream, JsonNode keys, JsonNode tasks, JsonNode topK) {
        SlbGrouping g = (SlbGrouping) Groupings.create(grouping, n, 0);
        for (int i = 0; i < keys.size(); i++) {
            assertEquals(tasks.get(i).asInt(), g.choose(keys.get(i).asText(), 0), grouping + ": tuple " + i);
        }
        List<Counter<String>> counters = g.counters();
        assertEquals(topK.size(), counters.size());
        for (int i = 0; i < counters.size(); i++) {
            JsonNode expected = topK.get(i);
            Counter<String> got = counters.get(i);
            assertEquals(expected.get(0).asText() + " " + expected.get(1).asLong() + " " + expected.get(2).asLong(),
                    got.getItem() + " " + got.getCount() + " " + got.getError(), "topK " + i);
        }
    }
}
