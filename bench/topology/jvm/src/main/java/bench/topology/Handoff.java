package bench.topology;

import com.fasterxml.jackson.databind.JsonNode;
import groupings.OwnershipGrouping;
import java.io.Serializable;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * HANDOFF at one router (one splitter instance's grouping): hold, whitelist, release
 * (docs/rescaling.md, "HANDOFF on Spark"; the hold/whitelist hand-off of rescaling.md §3).
 *
 * <p>The routers learn the new owners at once (SCALEUP: the event's routing is installed) but route
 * each moved unit (key group, vnode) to its <em>old</em> owner until it is whitelisted. A round of
 * units is first held (SHUTDOWN): from the batch that carries the hold, a router keeps the units'
 * tuples in its state instead of routing them, so the old owners' state of those units is final
 * once that batch has committed. The driver (bench/rescale/handoff.py) then reads that state, and a
 * later batch carries it to the new owners (REDISTRIBUTE) together with the units' whitelist: the
 * router sends the kept tuples, then every later tuple of those units, to the new owner. The batch
 * boundary is every router's FINAL: the rescale channel gives each splitter instance a copy of every
 * step in the same batch.
 *
 * <p>Kept in the router's state store ({@code handoff}, Java-serialized) apart from the grouping, so
 * an instance with no tuple yet keeps its part too.
 */
final class Handoff implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The field of a switch record that carries a HANDOFF step: {@code {"pending": {unit: old owner}}}
     * (SCALEUP, with the event's {@code switch}), {@code "whitelist": [unit, ...]} (release these
     * units to their new owners), {@code "hold": [unit, ...]} (keep these units' tuples from this
     * batch on). */
    static final String CONTROL_KEY = "handoff";

    /** A kept tuple, with the batch it was held in. */
    record Kept(Timestamp eventTs, String key, long count, int unit, long holdBatch) implements Serializable {}

    /** A tuple as the router sends it. */
    record Sent(Timestamp eventTs, String key, long count, int worker) {}

    /** One batch as the router sends it: the released kept tuples first (arrival order), then the
     * batch's tuples that were not held, in routing order; {@code released}: hold batch -> tuples
     * of it sent now, ascending; {@code changed}: the hand-off kept or released tuples (it must be
     * stored again). */
    record Routed(List<Sent> tuples, TreeMap<Long, Long> released, boolean changed) {}

    private long epoch;
    private final HashMap<Integer, Integer> pending = new HashMap<>();
    private final HashSet<Integer> held = new HashSet<>();
    private final List<Kept> kept = new ArrayList<>();
    private final HashSet<Integer> released = new HashSet<>();

    /** Whether routing differs from the grouping's own: moved units pending, or tuples kept. */
    boolean active() {
        return !pending.isEmpty() || !held.isEmpty() || !kept.isEmpty();
    }

    /** Whether this batch has something to send even without a tuple of its own (kept tuples released). */
    boolean releases() {
        return !released.isEmpty() && kept.stream().anyMatch(t -> released.contains(t.unit()));
    }

    /**
     * Apply the step of rescale channel epoch {@code epoch}, once (an epoch at or below the last one
     * applied is ignored: a restarted batch reads it again): SCALEUP's {@code pending}, then the
     * {@code whitelist}, then the {@code hold} (one step releases a round and holds the next).
     *
     * @return whether the step was new
     * @throws IllegalArgumentException a unit whitelisted or held that is not pending
     */
    boolean apply(long epoch, JsonNode step) {
        if (epoch <= this.epoch) {
            return false;
        }
        this.epoch = epoch;
        if (step.has("pending")) {
            pending.clear();
            for (Map.Entry<String, JsonNode> unit : step.get("pending").properties()) {
                pending.put(Integer.parseInt(unit.getKey()), unit.getValue().asInt());
            }
        }
        for (JsonNode unit : step.path("whitelist")) {
            if (pending.remove(unit.asInt()) == null) {
                throw new IllegalArgumentException("handoff epoch " + epoch + ": unit " + unit.asInt()
                        + " whitelisted but not pending");
            }
            held.remove(unit.asInt());
            released.add(unit.asInt());
        }
        for (JsonNode unit : step.path("hold")) {
            if (!pending.containsKey(unit.asInt())) {
                throw new IllegalArgumentException("handoff epoch " + epoch + ": unit " + unit.asInt()
                        + " held but not pending");
            }
            held.add(unit.asInt());
        }
        return true;
    }

    /**
     * Route one batch with the hand-off in force. The kept tuples of the units whitelisted by this
     * batch's steps go out first, to their new owner; tuples of held units are kept (with {@code
     * batchId}); tuples of pending units go to their old owner; the others are routed by {@code
     * grouping}, which has the new routing installed.
     *
     * @param keys, counts, eventTs the batch's tuples in routing order; {@code now} their clocks (ms)
     * @param watermarkMs the batch's watermark (epoch ms; 0 or less: none yet)
     * @throws IllegalStateException a released tuple's event time is below the watermark (Spark would
     *     refuse to emit it, {@code EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED}: the hold outlasted
     *     the watermark delay)
     */
    Routed route(OwnershipGrouping grouping, List<String> keys, long[] counts, List<Timestamp> eventTs, long[] now,
                 long batchId, long watermarkMs) {
        List<Sent> out = new ArrayList<>(keys.size());
        TreeMap<Long, Long> sentOf = new TreeMap<>();
        boolean changed = !released.isEmpty();
        long releaseClock = now.length > 0 ? now[0] : 0;
        List<Kept> stay = new ArrayList<>(kept.size());
        for (Kept t : kept) {
            if (!released.contains(t.unit())) {
                stay.add(t);
                continue;
            }
            if (watermarkMs > 0 && t.eventTs().getTime() < watermarkMs) {
                throw new IllegalStateException("HANDOFF held a tuple of event time " + t.eventTs().getTime()
                        + " ms past the watermark (" + watermarkMs + " ms) before its release: raise "
                        + "--watermark-delay-s above a round's length");
            }
            out.add(new Sent(t.eventTs(), t.key(), t.count(), grouping.choose(t.key(), releaseClock)));
            sentOf.merge(t.holdBatch(), 1L, Long::sum);
        }
        kept.clear();
        kept.addAll(stay);
        released.clear();
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            int unit = grouping.groupOf(key);
            if (held.contains(unit)) {
                kept.add(new Kept(eventTs.get(i), key, counts[i], unit, batchId));
                changed = true;
                continue;
            }
            Integer old = pending.get(unit);
            out.add(new Sent(eventTs.get(i), key, counts[i], old != null ? old : grouping.choose(key, now[i])));
        }
        return new Routed(out, sentOf, changed);
    }
}
