// The oracle of tests/groupings/test_slb.py: D-Choices and W-Choices as the authors wrote them
// (anisnasir/SLBStorm DChoiceGrouping/WChoiceGrouping), on the real stream-lib StreamSummary and
// Guava murmur3, for one source. Two departures, both documented in groupings/slb.py: m counts the
// messages (SLBStorm's totalItems stays 0; SLBSimulator counts it) and d starts at least at 1.
// Commons-math's FastMath is replaced by java.lang.Math (round, abs, pow).
//
// Regenerate the vectors (Java 17, stream-2.9.8.jar and guava-33.6.0-jre.jar from Maven Central):
//   java -cp stream-2.9.8.jar:guava-33.6.0-jre.jar SlbTrace.java D 10 10 0.0001 keys.txt > out.txt
// Input: one key per line. Output: one worker index per line, then "#", then the summary's
// topK(100) as "key count error" lines.
import com.clearspring.analytics.stream.Counter;
import com.clearspring.analytics.stream.StreamSummary;
import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

public class SlbTrace {
    public static void main(String[] args) throws Exception {
        boolean wChoices = args[0].equals("W");
        int n = Integer.parseInt(args[1]);
        int t = Integer.parseInt(args[2]);
        double epsilon = Double.parseDouble(args[3]);
        List<String> keys = Files.readAllLines(Paths.get(args[4]), StandardCharsets.UTF_8);
        StreamSummary<String> summary = new StreamSummary<String>(100);
        HashFunction h1 = Hashing.murmur3_128(13);
        HashFunction h2 = Hashing.murmur3_128(17);
        HashFunction[] hash = new HashFunction[n];
        int prime = 2;
        for (int i = 0; i < n; i++) {
            hash[i] = Hashing.murmur3_128(prime);
            do { prime++; } while (!isPrime(prime));
        }
        long[] stats = new long[n];
        long m = 0;
        StringBuilder out = new StringBuilder();
        for (String str : keys) {
            m++;
            summary.offer(str);
            float probability = 2 / (float) (n * t);
            int selected;
            Counter<String> mine = null;
            for (Counter<String> c : summary.topK(summary.getCapacity())) {
                if (c.getItem().equals(str)) mine = c;
            }
            boolean head = ((float) mine.getCount() + (float) mine.getError()) / m > probability;
            if (head && wChoices) {
                int[] choice = new int[n];
                for (int i = 0; i < n; i++) choice[i] = i;
                selected = selectMinChoice(stats, choice);
            } else if (head) {
                int choices = dChoices(summary, m, n, probability, epsilon);
                int[] choice;
                byte[] b = str.getBytes(StandardCharsets.UTF_8);
                if (choices < n) {
                    choice = new int[choices];
                    for (int i = 0; i < choices; i++) choice[i] = Math.abs(hash[i].hashBytes(b).asInt() % n);
                } else {
                    choice = new int[n];
                    for (int i = 0; i < n; i++) choice[i] = i;
                }
                selected = selectMinChoice(stats, choice);
            } else {
                byte[] b = str.getBytes(StandardCharsets.UTF_8);
                int first = (int) (Math.abs(h1.hashBytes(b).asLong()) % n);
                int second = (int) (Math.abs(h2.hashBytes(b).asLong()) % n);
                selected = stats[first] > stats[second] ? second : first;
            }
            stats[selected]++;
            out.append(selected).append('\n');
        }
        out.append("#\n");
        for (Counter<String> c : summary.topK(summary.getCapacity())) {
            out.append(c.getItem()).append(' ').append(c.getCount()).append(' ').append(c.getError()).append('\n');
        }
        System.out.print(out);
    }

    // DChoiceGrouping's number of choices d for a head key, from the summary's head after m messages.
    static int dChoices(StreamSummary<String> summary, long m, int n, float probability, double epsilon) {
        Counter<String> top = summary.topK(1).get(0);
        double pTop = ((float) top.getCount() + (float) top.getError()) / m;
        double pHead = 0;
        int headSize = 0;
        for (Counter<String> c : summary.topK(summary.getCapacity())) {
            float itemProb = ((float) c.getCount() + (float) c.getError()) / m;
            if (itemProb > probability) {
                pHead += itemProb;
                headSize++;
            }
        }
        double pTail = 1 - pHead;
        double val1 = (n - 1) / (double) n;
        double d = Math.max(1, Math.round(pTop * n));
        double val3, sum1, value2, sum2;
        do {
            val3 = 1 - Math.pow(val1, headSize * d);
            sum1 = pHead + pTail * (val3 * val3);
            value2 = 1 - Math.pow(val1, d);
            sum2 = pTop + ((pHead - pTop) * Math.pow(value2, d)) + (pTail * (value2 * value2));
            d++;
        } while ((d <= n) && ((sum1 > (val3 + epsilon)) || (sum2 > (value2 + epsilon))));
        return (int) d - 1;
    }

    static int selectMinChoice(long[] loads, int[] choice) {
        int index = choice[0];
        for (int c : choice) if (loads[c] < loads[index]) index = c;
        return index;
    }

    static boolean isPrime(int x) {
        for (int i = 2; i < x; i++) if (x % i == 0) return false;
        return true;
    }
}
