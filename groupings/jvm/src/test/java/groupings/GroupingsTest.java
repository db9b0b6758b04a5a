package groupings;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Groupings#create} with parameters builds the instance its constructor does: the golden
 * stream routed by both, tuple by tuple (the stream in Spark's JVM stage is checked against the
 * Python groupings with the same parameters, tests/topology/test_jvm_stage.py).
 */
class GroupingsTest {
    static int[] routed(BiFunction<Integer, Long, ReferenceGrouping> factory) {
        return GoldenStream.run(factory, 5, 2, 20_000, null).tasks;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("withParameters")
    void parametersReachTheConstructors(String grouping, Map<String, Long> params,
                                        BiFunction<Integer, Long, ReferenceGrouping> constructor) {
        int[] created = routed((n, t) -> Groupings.create(grouping, n, t, params));
        assertArrayEquals(routed(constructor), created);
        assertFalse(Arrays.equals(routed((n, t) -> Groupings.create(grouping, n, t)), created),
                "the parameters change nothing on the golden stream: the test cannot see them");
    }

    static Stream<Arguments> withParameters() {
        return Stream.of(
                Arguments.of("DYNAMIC_KEY", Map.of("distinct_key_count", 3L, "warm_up_ms", 0L, "check_interval_ms", 500L,
                                "initial_pool_size", 1L, "maintenance_period_ms", 2_000L, "old_promotion_every", 2L),
                        (BiFunction<Integer, Long, ReferenceGrouping>) (n, t) ->
                                new DynamicKeyGrouping(n, t, 3, 0, 500, 1, 2_000, 2)),
                Arguments.of("KEY_GROUP", Map.of("max_parallelism", 256L),
                        (BiFunction<Integer, Long, ReferenceGrouping>) (n, t) -> new KeyGroupGrouping(n, t, 256)),
                Arguments.of("VNODE", Map.of("vnodes", 64L),
                        (BiFunction<Integer, Long, ReferenceGrouping>) (n, t) -> new VNodeGrouping(n, t, 64)));
    }

    @Test
    void parametersLeftOutKeepTheirDefaults() {
        assertArrayEquals(routed((n, t) -> Groupings.create("DYNAMIC_KEY", n, t)),
                routed((n, t) -> Groupings.create("DYNAMIC_KEY", n, t, Map.of("distinct_key_count", 100L))));
        assertEquals(128, ((KeyGroupGrouping) Groupings.create("KEY_GROUP", 5, 0, Map.of())).groups);
    }

    @Test
    void aParameterAGroupingDoesNotTakeHereIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Groupings.create("D_CHOICES", 5, 0, Map.of("t", 2L)));
        assertEquals("D_CHOICES takes no parameter [t] in the Java port; it takes none", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Groupings.create("VNODE", 5, 0, Map.of("max_parallelism", 256L)));
        assertThrows(IllegalArgumentException.class, () -> Groupings.create("VNODE", 5, 0, Map.of("vnodes", 1L << 40)));
        assertThrows(IllegalArgumentException.class, () -> Groupings.create("VNODE", 5, 0, Map.of("vnodes", 4L)));
    }
}
