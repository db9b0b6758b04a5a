package groupings;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The paced cost: a sleep every K tuples, never less busy time than sleeps x cost (a sleep's
 * overshoot only moves time to the next sleep), and no sleep at cost 0. */
class PacedCostTest {
    @Test
    void everyKthTuplePaysTheCostAndOvershootIsNeverTakenBelowTheTotal() {
        PacedCost cost = new PacedCost(0.5, 3);
        long start = System.nanoTime();
        for (int i = 0; i < 300; i++) {
            cost.pay();
        }
        // 100 sleeps of 0.5 ms: at least 50 ms in all, whatever each sleep overshot.
        assertTrue(System.nanoTime() - start >= 50_000_000L);
    }

    @Test
    void aNegativeCostOrKBelowOneIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PacedCost(-1, 1));
        assertThrows(IllegalArgumentException.class, () -> new PacedCost(1, 0));
    }
}
