package groupings;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** KEY_GROUP and VNODE against the vectors of docs/reference/rescaling.md §1-2, and {@code assign};
 * KEY's rescale (the baseline, §3). */
class OwnershipTest {
    static final int[] PARALLELISMS = {1, 3, 4, 5, 10, 12, 16, 20};

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', value = {
        "Turkey      | -1778564402 | 1910255032 | 56  | 184 | 0 2 2 3 7 8 11 14 | 0 1 1 2 4 5 7 8",
        "Germany     | 1588421523  | 549910552  | 24  | 24  | 0 0 0 0 0 1 1 1   | 0 0 0 0 1 2 3 3",
        "Afghanistan | -884569212  | 444408451  | 3   | 131 | 0 1 2 2 5 6 8 10  | 0 0 0 0 0 0 0 0",
        "Zimbabwe    | -148183597  | 606917262  | 14  | 142 | 0 1 2 2 5 6 8 11  | 0 0 0 0 1 1 1 2",
        "turkey      | -862431570  | 158921518  | 46  | 46  | 0 0 0 0 1 2 2 3   | 0 1 1 1 3 4 5 7",
        "ElectionDay | -1920795485 | 249712881  | 113 | 241 | 0 2 3 4 9 11 15 18 | 0 2 3 4 8 10 14 17",
        "''          | 0           | 593689054  | 94  | 222 | 0 2 3 4 8 10 13 17 | 0 2 2 3 7 8 11 14",
        "K000        | 2281989     | 349611135  | 127 | 127 | 0 1 1 2 4 5 7 9   | 0 2 3 4 9 11 15 19",
    })
    void keyGroupsAreFlinks(String key, int hashCode, int murmur, int kg128, int kg256, String ops256, String ops128) {
        assertEquals(hashCode, key.hashCode());
        assertEquals(murmur, KeyGroupGrouping.murmurHash(hashCode));
        assertEquals(kg128, KeyGroupGrouping.assignToKeyGroup(key, 128));
        assertEquals(kg256, KeyGroupGrouping.assignToKeyGroup(key, 256));
        assertArrayEquals(ints(ops256), owners(key, 256));
        assertArrayEquals(ints(ops128), owners(key, 128));
    }

    @Test
    void defaultMaxParallelismIsFlinks() {
        assertArrayEquals(new int[] {128, 128, 256, 2048},
                Arrays.stream(new int[] {1, 10, 100, 1000}).map(KeyGroupGrouping::defaultMaxParallelism).toArray());
    }

    @Test
    void keyGroupRangesAreContiguous() {
        assertArrayEquals(new int[] {52, 51, 51, 51, 51}, sizes(new KeyGroupGrouping(5, 0, 256).assignment(), 5));
        int[] owners = new KeyGroupGrouping(5, 0, 256).assignment();
        assertArrayEquals(new int[] {0, 1, 1, 2, 2, 3, 3, 4, 4},
                new int[] {owners[51], owners[52], owners[102], owners[103], owners[153], owners[154], owners[204],
                    owners[205], owners[255]});
    }

    @Test
    void rescalingFourToFiveMovesFlinksKeyGroupsAndWidensTheLoads() {
        KeyGroupGrouping four = new KeyGroupGrouping(4, 0, 256);
        four.choose("Turkey", 0);
        int[] moved = four.assign(new KeyGroupGrouping(5, 0, 256).assignment());
        assertEquals(126, moved.length);
        assertEquals(5, four.numWorkers());
        assertArrayEquals(new long[] {0, 0, 1, 0, 0}, four.loads());
        assertEquals(3, four.choose("Turkey", 0)); // kg 184 * 5 / 256
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource({"Turkey, 81", "Germany, 183", "Afghanistan, 151", "Zimbabwe, 54", "'', 0", "K000, 239"})
    void vnodesAreCrc32(String key, int vnode) {
        assertEquals(vnode, VNodeGrouping.vnodeOf(key, 256));
        assertEquals(vnode * 4 / 256, new VNodeGrouping(4, 0).ownerOf(key));
    }

    @Test
    void aMinimalMoveTableFromTheControlPlaneMovesOnlyItsVnodes() {
        // rescaling.md §2: 4 -> 5 moves 51 vnodes, the new worker 4 gets 52-63, 115-127, 179-191, 243-255
        VNodeGrouping vnodes = new VNodeGrouping(4, 0);
        int[] table = vnodes.assignment();
        for (int[] range : new int[][] {{52, 64}, {115, 128}, {179, 192}, {243, 256}}) {
            Arrays.fill(table, range[0], range[1], 4);
        }
        assertEquals(51, vnodes.assign(table).length);
        assertArrayEquals(new int[] {52, 51, 51, 51, 51}, sizes(vnodes.assignment(), 5));
        assertEquals(4, vnodes.ownerOf("Zimbabwe")); // vnode 54
        assertEquals(0, vnodes.assign(table).length);
    }

    @Test
    void aScaleInNarrowsTheLoadsAndABadTableChangesNothing() {
        VNodeGrouping vnodes = new VNodeGrouping(3, 0, 6);
        assertEquals(2, vnodes.choose("Turkey", 0)); // CRC 2735251025 % 6 = vnode 5
        assertThrows(IllegalArgumentException.class, () -> vnodes.assign(new int[] {0, 0, 0}));
        assertThrows(IllegalArgumentException.class, () -> vnodes.assign(new int[] {0, 0, 0, -1, 1, 1}));
        assertArrayEquals(new int[] {0, 0, 1, 1, 2, 2}, vnodes.assignment());
        assertArrayEquals(new int[] {4, 5}, vnodes.assign(new int[] {0, 0, 1, 1, 0, 1}));
        assertEquals(2, vnodes.numWorkers());
        assertArrayEquals(new long[] {0, 0}, vnodes.loads()); // worker 2's load left with it
        assertEquals(1, vnodes.choose("Turkey", 0));
        assertArrayEquals(new long[] {0, 1}, vnodes.loads());
    }

    @Test
    void keyRescalesToHashModTheNewCountKeepingTheLoadsBelowBoth() {
        KeyGrouping key = new KeyGrouping(4, 0);
        int before = key.choose("Turkey", 0);
        key.rescale(6);
        assertEquals(6, key.numWorkers());
        long[] kept = new long[6];
        kept[before] = 1;
        assertArrayEquals(kept, key.loads()); // the load of an id below both sizes stays
        assertEquals(new KeyGrouping(6, 0).choose("Turkey", 0), key.choose("Turkey", 0));
        assertThrows(IllegalArgumentException.class, () -> key.rescale(0));
        assertEquals(6, key.numWorkers());
    }

    @Test
    void groupCountsOutsideTheirBoundsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new KeyGroupGrouping(10, 0, 8));
        assertThrows(IllegalArgumentException.class, () -> new KeyGroupGrouping(10, 0, (1 << 15) + 1));
        assertThrows(IllegalArgumentException.class, () -> new VNodeGrouping(300, 0));
    }

    private static int[] owners(String key, int maxParallelism) {
        return Arrays.stream(PARALLELISMS).map(p -> new KeyGroupGrouping(p, 0, maxParallelism).ownerOf(key)).toArray();
    }

    private static int[] sizes(int[] owners, int workers) {
        int[] sizes = new int[workers];
        for (int owner : owners) {
            sizes[owner]++;
        }
        return sizes;
    }

    private static int[] ints(String text) {
        return Arrays.stream(text.trim().split("\\s+")).mapToInt(Integer::parseInt).toArray();
    }
}
