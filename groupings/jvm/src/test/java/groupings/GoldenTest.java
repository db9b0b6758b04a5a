package groupings;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The public golden vectors of dkg-reference.md §15 and the full traces in tests/groupings/golden. */
class GoldenTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "SHUFFLE, trace_sg_n5_s1_skew80.txt.gz, c4d07be296daf565ce21e5222993e2fc",
        "KEY, trace_kg_n5_s1_skew80.txt.gz, 4e750b2474a8e2e89ca1af6635a78da1",
        "PARTIAL_KEY, trace_pkg_n5_s1_skew80.txt.gz, 9f20bcee72819e599b27cafc5861a9d2",
        "DYNAMIC_KEY, trace_dkg_n5_s1_skew80.txt.gz, f24da4d0d2852666f5dc702049bcbc51",
    })
    void fullTraceEqualsGolden(String grouping, String file, String md5) throws Exception {
        String ours = GoldenStream.run(grouping, 5, 1, GoldenStream.COUNT).trace(1);
        // The first differing line says where a port went wrong; then the digest of the whole text.
        try (BufferedReader golden = new BufferedReader(new InputStreamReader(
                     new GZIPInputStream(Files.newInputStream(GoldenStream.goldenDir().resolve(file))),
                     StandardCharsets.US_ASCII));
             BufferedReader mine = new BufferedReader(new StringReader(ours))) {
            int line = 0;
            for (String expected; (expected = golden.readLine()) != null; line++) {
                assertEquals(expected, mine.readLine(), grouping + ": first difference at line " + line);
            }
            assertEquals(null, mine.readLine(), grouping + ": more lines than the golden trace");
            assertEquals(GoldenStream.COUNT, line);
        }
        byte[] digest = MessageDigest.getInstance("MD5").digest(ours.getBytes(StandardCharsets.US_ASCII));
        assertEquals(md5, HexFormat.of().formatHex(digest));
    }

    @ParameterizedTest(name = "{0} n={1} S={2}")
    @CsvSource(delimiter = '|', value = {
        "SHUFFLE|5|1|12000 12000 12000 12000 12000|0 1 2 3 4",
        "KEY|5|1|50437 1812 2725 2758 2268|0",
        "PARTIAL_KEY|5|1|25113 25114 3257 3258 3258|0 1",
        "DYNAMIC_KEY|5|1|14269 13801 13800 13799 4331|0 1 2 3",
        "SHUFFLE|10|10|6000 6000 6000 6000 6000 6000 6000 6000 6000 6000|0 1 2 3 4 5 6 7 8 9",
        "KEY|10|10|1208 840 1171 1705 1298 49229 972 1554 1053 970|5",
        "PARTIAL_KEY|10|10|1405 1386 1398 1408 1401 24404 24403 1405 1401 1389|5 6",
        "DYNAMIC_KEY|10|10|8993 1339 1237 1632 1383 9404 9012 9000 9000 9000|0 5 6 7 8 9",
    })
    void scenarios(String grouping, int n, int sources, String counts, String turkeyTasks) {
        GoldenStream.Routed routed = GoldenStream.run(grouping, n, sources, GoldenStream.COUNT);
        assertArrayEquals(longs(counts), routed.perTaskCounts(n));
        TreeSet<Integer> turkey = new TreeSet<>();
        long pairs = 0;
        java.util.HashSet<String> seen = new java.util.HashSet<>();
        java.util.HashSet<String> keys = new java.util.HashSet<>();
        for (int i = 0; i < routed.tasks.length; i++) {
            if (routed.keys[i].equals("Turkey")) {
                turkey.add(routed.tasks[i]);
            }
            keys.add(routed.keys[i]);
            if (seen.add(routed.keys[i] + "\u0000" + routed.tasks[i])) {
                pairs++;
            }
        }
        assertEquals(turkeyTasks, String.join(" ", turkey.stream().map(String::valueOf).toList()));
        assertEquals(201, keys.size());
        long expectedPairs = Map.of("SHUFFLE5", 1005L, "KEY5", 201L, "PARTIAL_KEY5", 272L, "DYNAMIC_KEY5", 369L,
                "SHUFFLE10", 2006L, "KEY10", 201L, "PARTIAL_KEY10", 329L, "DYNAMIC_KEY10", 411L).get(grouping + n);
        assertEquals(expectedPairs, pairs, "DIST_COST pairs");
    }

    @Test
    void dynamicKeyPoolEventsAndFinalStateN5() {
        List<String> events = new ArrayList<>();
        DynamicKeyGrouping dkg = poolEvents(5, 1, events);
        assertEquals(List.of("2->3 @ 60.015", "3->4 @ 120.020", "4->3 @ 180.030", "3->4 @ 240.035"), events);
        assertEquals(Map.of("Turkey", 4), dkg.poolSizes());
        assertEquals(List.of("K008", "K022", "K035", "K049", "K054", "K065", "K071", "K077", "K125", "Turkey"),
                sortedKeys(dkg.keySpace().oldItems()));
    }

    @Test
    void dynamicKeyPoolEventsAndFinalStateN10S10() {
        List<String> events = new ArrayList<>();
        DynamicKeyGrouping dkg = poolEvents(10, 10, events);
        assertEquals(List.of("2->3 @ 60.150", "3->4 @ 120.200", "4->5 @ 180.250", "5->6 @ 240.300"), events);
        assertEquals(Map.of("K000", 5, "K009", 3, "K060", 3, "K076", 3, "K125", 3, "Turkey", 6), dkg.poolSizes());
        assertEquals(List.of("K000", "K009", "K035", "K037", "K070", "K076", "K110", "K119", "K125", "Turkey"),
                sortedKeys(dkg.keySpace().oldItems()));
    }

    private static DynamicKeyGrouping poolEvents(int n, int sources, List<String> events) {
        int[] last = {2};
        GoldenStream.Routed routed = GoldenStream.run(DynamicKeyGrouping::new, n, sources, GoldenStream.COUNT,
                (instance, now) -> {
                    int size = ((DynamicKeyGrouping) instance).poolSize("Turkey");
                    if (size != last[0]) {
                        events.add(String.format("%d->%d @ %.3f", last[0], size, (now - GoldenStream.T0) / 1000.0));
                        last[0] = size;
                    }
                });
        return (DynamicKeyGrouping) routed.instances.get(0);
    }

    @Test
    void firstThirtyRoutings() {
        // §15.3, n=5, S=1.
        assertEquals("0 1 0 1 2 0 1 0 1 3 0 1 0 4 1 0 1 0 1 2 0 4 1 0 1 0 1 4 0 1", first("DYNAMIC_KEY", 5, 30));
        assertEquals("0 1 0 1 2 0 1 0 1 3 0 1 0 4 1 0 1 0 1 2 0 4 1 0 1 2 0 3 1 0", first("PARTIAL_KEY", 5, 30));
        assertEquals("0 0 0 0 2 0 0 0 0 3 0 0 0 4 0 0 0 0 0 2 0 4 0 0 0 0 0 4 0 0", first("KEY", 5, 30));
    }

    private static String first(String grouping, int n, int count) {
        int[] tasks = GoldenStream.run(grouping, n, 1, count).tasks;
        return String.join(" ", java.util.Arrays.stream(tasks).mapToObj(String::valueOf).toList());
    }

    private static final String[] OTHERS = {"Germany", "France", "Spain", "Italy", "Brazil", "Japan", "Chile"};

    private static String patternKey(int i) {
        return i % 10 < 8 ? "Turkey" : OTHERS[(i / 10) % 7];
    }

    @Test
    void smallVectorB() {
        // §15.5 B: DKG n=5, one instance, 1000 tuples all at now = start.
        DynamicKeyGrouping dkg = new DynamicKeyGrouping(5, 0);
        StringBuilder first40 = new StringBuilder();
        for (int i = 0; i < 1000; i++) {
            int t = dkg.choose(patternKey(i), 0);
            if (i < 40) {
                first40.append(i == 0 ? "" : " ").append(t);
            }
        }
        assertEquals("0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 2 2 0 1 0 1 0 1 0 1 3 4 0 1 0 1 0 1 0 1 3 4",
                first40.toString());
        assertArrayEquals(new long[] {419, 411, 62, 59, 49}, dkg.loads());
    }

    @ParameterizedTest(name = "{0} n={1}")
    @CsvSource(delimiter = '|', value = {
        "KEY|5|0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1",
        "PARTIAL_KEY|5|0 1 0 1 0 1 0 1 3 3 0 1 0 1 0 1 0 1 4 4",
        "SHUFFLE|5|0 1 2 3 4 0 1 2 3 4 0 1 2 3 4 0 1 2 3 4",
        "KEY|10|5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 1 1",
        "PARTIAL_KEY|10|5 6 5 6 5 6 5 6 3 3 5 6 5 6 5 6 5 6 1 9",
        "SHUFFLE|10|0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9",
    })
    void smallVectorD(String grouping, int n, String expected) {
        ReferenceGrouping g = Groupings.create(grouping, n, 0);
        List<String> tasks = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            tasks.add(String.valueOf(g.choose(patternKey(i), 0)));
        }
        assertEquals(expected, String.join(" ", tasks));
    }

    @Test
    void keySpaceWorkedExampleA() {
        // §7.9: KeySpace(20) gives OLD=2, TEEN=8, BABY=10; orders are HashMap iteration orders.
        KeySpace ks = new KeySpace(20);
        for (int k = 0; k < 15; k++) {
            for (int c = 0; c <= k; c++) {
                ks.record(String.format("k%02d", k));
            }
        }
        assertEquals("k00=1 k11=12 k10=11 k02=3 k13=14 k01=2 k12=13 k04=5 k03=4 k14=15 k06=7 k05=6 k08=9 k07=8 k09=10",
                text(ks.babyItems()));
        ks.promoteToTeenageSpace();
        assertEquals("k06=7 k05=6", text(ks.babyItems()));
        assertEquals("k08=9 k07=8 k09=10 k11=12 k10=11 k13=14 k12=13 k14=15", text(ks.teenItems()));
        for (int c = 0; c < 20; c++) {
            ks.record("k00");
        }
        for (int c = 0; c < 30; c++) {
            ks.record("new1");
        }
        ks.promoteToTeenageSpace();
        assertEquals("k06=7 k05=6 k08=9 k07=8", text(ks.babyItems()));
        assertEquals("new1=30 k09=10 k00=20 k11=12 k10=11 k13=14 k12=13 k14=15", text(ks.teenItems()));
        ks.promoteToOldSpace();
        assertEquals("new1=30 k00=20", text(ks.oldItems()));
        assertEquals("k09=10 k11=12 k10=11 k13=14 k12=13 k14=15", text(ks.teenItems()));
        assertEquals("k06=7 k05=6 k08=9 k07=8", text(ks.babyItems()));
    }

    @Test
    void unknownGroupingIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Groupings.create("FIELDS", 5, 0));
    }

    private static String text(List<Map.Entry<String, Long>> items) {
        return String.join(" ", items.stream().map(e -> e.getKey() + "=" + e.getValue()).toList());
    }

    private static List<String> sortedKeys(List<Map.Entry<String, Long>> items) {
        return items.stream().map(Map.Entry::getKey).sorted().toList();
    }

    private static long[] longs(String text) {
        return java.util.Arrays.stream(text.trim().split("\\s+")).mapToLong(Long::parseLong).toArray();
    }

}
