package groupings;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The hash vectors of dkg-reference.md §2.4 and the thresholds of §6.2. */
class HashingTest {
    @ParameterizedTest(name = "key [{0}]")
    @CsvSource(delimiter = '|', value = {
        "Turkey|-427684801386502345|7979424307051361886|0,1|5,6|5,6|45,36|45,86",
        "Germany|-3943748476822496995|8828878774950078693|0,3|5,3|15,13|45,43|95,93",
        "Afghanistan|5846224766063328213|-5462568596507215696|3,1|3,6|13,16|13,46|13,96",
        "Zimbabwe|5582228121691754290|-4155365976659175834|0,4|0,4|10,14|40,34|90,34",
        "turkey|4914041097580604050|2465626758700262132|0,2|0,2|10,12|0,32|50,32",
        "ElectionDay|4179363758177974984|3565267891696091900|4,0|4,0|4,0|34,0|84,0",
        "''|-6841345300810786470|-4666168469225958328|0,3|0,8|10,8|20,28|70,28",
        "K000|-728845460568349735|-3546658139252020285|0,0|5,5|15,5|35,35|35,85",
        "Türkiye|3178152554529848584|1821103456845004622|4,2|4,2|4,2|34,22|84,22",
        "\uD83D\uDE00x|3043571183902410102|2208876430465710374|2,4|2,4|2,14|2,24|2,74",
    })
    void vectors(String key, long seed13, long seed17, String n5, String n10, String n20, String n50, String n100) {
        assertEquals(seed13, Hashing.asLong(13, key));
        assertEquals(seed17, Hashing.asLong(17, key));
        int[] ns = {5, 10, 20, 50, 100};
        String[] pairs = {n5, n10, n20, n50, n100};
        for (int j = 0; j < ns.length; j++) {
            String got = Hashing.index(13, key, ns[j]) + "," + Hashing.index(17, key, ns[j]);
            assertEquals(pairs[j], got, "n=" + ns[j]);
        }
    }

    @ParameterizedTest(name = "n={0}")
    @CsvSource({"1,110,90", "2,57,42", "3,39,27", "4,30,20", "5,24,15", "10,13,6", "20,7,2", "50,3,0", "100,2,0",
                "101,1,0", "261,1,0", "262,0,0", "6,20,", "13,10,", "42,3,", "58,3,", "59,2,"})
    void thresholds(int n, int up, Integer down) {
        int[] t = DynamicKeyGrouping.scaleThresholds(n);
        assertEquals(up, t[0]);
        if (down != null) {
            assertEquals(down.intValue(), t[1]);
        }
    }

    @org.junit.jupiter.api.Test
    void longMinValueIndexIsNegative() {
        // §2.3: -(2^63 mod n); 0 for a power of two.
        assertEquals(-3, Hashing.indexOfLong(Long.MIN_VALUE, 5));
        assertEquals(0, Hashing.indexOfLong(Long.MIN_VALUE, 8));
    }
}
