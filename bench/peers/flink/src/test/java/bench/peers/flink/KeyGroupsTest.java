package bench.peers.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Flink's KeyGroupRangeAssignment against docs/rescaling.md section 1 (docs/reference/rescaling.md). */
class KeyGroupsTest {
    private static final int[] PARALLELISMS = {1, 3, 4, 5, 10, 12, 16, 20};

    @Test
    void fourToFiveWorkersAtMaxParallelism256Moves126KeyGroups() {
        assertEquals(126, KeyGroups.moved(256, 4, 5).size());
    }

    @Test
    void tenToTwelveWorkersAtMaxParallelism128Moves96KeyGroups() {
        // The harness's Python KEY_GROUP gives 96 too; 12 -> 10 moves the same groups back.
        assertEquals(96, KeyGroups.moved(128, 10, 12).size());
        assertEquals(KeyGroups.moved(128, 10, 12), KeyGroups.moved(128, 12, 10));
        assertEquals(0, KeyGroups.moved(128, 10, 10).size());
    }

    @Test
    void rangesAreContiguousAsDocumented() {
        // maxP 256, p = 5: [0,52) [52,103) [103,154) [154,205) [205,256)
        int[] starts = {0, 52, 103, 154, 205, 256};
        for (int w = 0; w < 5; w++) {
            for (int kg = starts[w]; kg < starts[w + 1]; kg++) {
                assertEquals(w, KeyGroups.owner(kg, 256, 5), "key group " + kg);
            }
        }
    }

    /** key, kg at maxP 128, kg at maxP 256, ops at maxP 256 and at maxP 128 for p = 1,3,4,5,10,12,16,20. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "Turkey|56|184|0,2,2,3,7,8,11,14|0,1,1,2,4,5,7,8",
        "Germany|24|24|0,0,0,0,0,1,1,1|0,0,0,0,1,2,3,3",
        "Afghanistan|3|131|0,1,2,2,5,6,8,10|0,0,0,0,0,0,0,0",
        "Zimbabwe|14|142|0,1,2,2,5,6,8,11|0,0,0,0,1,1,1,2",
        "turkey|46|46|0,0,0,0,1,2,2,3|0,1,1,1,3,4,5,7",
        "ElectionDay|113|241|0,2,3,4,9,11,15,18|0,2,3,4,8,10,14,17",
        "''|94|222|0,2,3,4,8,10,13,17|0,2,2,3,7,8,11,14",
        "K000|127|127|0,1,1,2,4,5,7,9|0,2,3,4,9,11,15,19",
    })
    void vectorsOfTheReference(String key, int kg128, int kg256, String ops256, String ops128) {
        assertEquals(kg128, KeyGroups.unit(key, 128));
        assertEquals(kg256, KeyGroups.unit(key, 256));
        assertEquals(ops256, ops(kg256, 256));
        assertEquals(ops128, ops(kg128, 128));
    }

    private static String ops(int kg, int maxP) {
        return String.join(",", IntStream.of(PARALLELISMS).mapToObj(p -> String.valueOf(KeyGroups.owner(kg, maxP, p))).toList());
    }
}
