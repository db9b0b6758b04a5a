package groupings;

import com.clearspring.analytics.stream.Counter;
import java.util.List;

/**
 * D_CHOICES (groupings/slb.py {@code DChoicesGrouping}; SLBStorm {@code DChoiceGrouping}): a head key
 * goes to the least loaded of its d hash choices, {@code Math.abs(murmur3_128(seed).asInt() % n)}
 * for the first d primes 2, 3, 5, ...; d is the smallest from {@code max(1, round(p_top * n))}
 * that satisfies both inequalities of the paper within epsilon = 0.0001, or every worker when d
 * reaches n. The tail by PARTIAL_KEY's rule ({@link SlbGrouping}).
 */
public final class DChoicesGrouping extends SlbGrouping {
    private static final long serialVersionUID = 1L;
    static final double EPSILON = 1e-4;

    public DChoicesGrouping(int numWorkers, long startMs) {
        super(numWorkers, startMs);
    }

    @Override
    protected int[] headCandidates(String key, List<Counter<String>> counters) {
        int d = choices(counters);
        if (d >= numWorkers) {
            return everyWorker();
        }
        int[] candidates = new int[d];
        int prime = 2;
        for (int i = 0; i < d; i++) {
            candidates[i] = Math.abs((int) Hashing.asLong(prime, key) % numWorkers);  // Guava's asInt(): the low word
            prime = nextPrime(prime);
        }
        return candidates;
    }

    /** d, as SLBStorm's do/while computes it from the summary's p_top (topK(1)), p_H and |H|. */
    private int choices(List<Counter<String>> counters) {
        int n = numWorkers;
        double pTop = probability(counters.get(0));
        double pHead = 0;
        int headSize = 0;
        for (Counter<String> counter : counters) {
            float p = probability(counter);
            if (p > theta) {
                pHead += p;
                headSize++;
            }
        }
        double pTail = 1 - pHead;
        double base = (n - 1) / (double) n;
        double d = Math.max(1, Math.round(pTop * n));
        double headTerm;
        double sumHead;
        double topTerm;
        double sumTop;
        do {
            headTerm = 1 - Math.pow(base, headSize * d);
            sumHead = pHead + pTail * (headTerm * headTerm);
            topTerm = 1 - Math.pow(base, d);
            sumTop = pTop + ((pHead - pTop) * Math.pow(topTerm, d)) + (pTail * (topTerm * topTerm));
            d++;
        } while (d <= n && (sumHead > headTerm + EPSILON || sumTop > topTerm + EPSILON));
        return (int) d - 1;
    }

    private static int nextPrime(int prime) {
        int candidate = prime + 1;
        while (!isPrime(candidate)) {
            candidate++;
        }
        return candidate;
    }

    private static boolean isPrime(int x) {
        for (int i = 2; (long) i * i <= x; i++) {
            if (x % i == 0) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String name() {
        return "D_CHOICES";
    }
}
