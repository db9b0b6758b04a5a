package bench.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;

/** A rescale run's routings and switches ({@link GroupingStage#apply(Dataset, String, int, String, String,
 * String, Dataset)}'s {@code rescale}). */
final class Rescale implements Serializable {
    private static final long serialVersionUID = 1L;
    final int width;
    final List<Routing> routings;
    final long[] switchBatches;
    final boolean live;
    final boolean handoff;
    /** A real-time query's live rescale: the rescale channel's folder, whose barrier the routers keep
     * ({@link ChannelBarrier}); null otherwise. */
    final String channel;

    Rescale(int width, List<Routing> routings, long[] switchBatches, boolean live, boolean handoff, String channel) {
        this.width = width;
        this.routings = routings;
        this.switchBatches = switchBatches;
        this.live = live;
        this.handoff = handoff;
        this.channel = channel;
    }

    boolean any() {
        return !routings.isEmpty();
    }

    /**
     * @param live the switches come as control rows (a micro-batch query's live rescale)
     * @param realTime the query runs in Real-Time Mode: a {@code "channel"} makes it a live rescale
     *     whose switches the routers read from that folder
     */
    static Rescale parse(String json, int workers, boolean live, boolean realTime) {
        JsonNode node;
        try {
            node = GroupingStage.JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("a rescale must be a JSON object, got " + json, e);
        }
        List<Routing> routings = new ArrayList<>();
        node.path("routings").forEach(r -> routings.add(Routing.parse(r)));
        long[] batches = new long[node.path("switch_batches").size()];
        for (int k = 0; k < batches.length; k++) {
            batches[k] = node.get("switch_batches").get(k).asLong();
        }
        if (batches.length > routings.size()) {
            throw new IllegalArgumentException(batches.length + " switches but " + routings.size() + " routings");
        }
        if (live && batches.length > 0) {
            throw new IllegalArgumentException("a live rescale switches by its control rows, not by switch batches");
        }
        int width = node.path("width").asInt(workers);
        if (width < workers) {
            throw new IllegalArgumentException("width " + width + " is below workers " + workers);
        }
        boolean handoff = node.path("handoff").asBoolean(false);
        String channel = node.hasNonNull("channel") ? node.get("channel").asText() : null;
        if (handoff && !live && channel == null) {
            throw new IllegalArgumentException(
                    "a HANDOFF is a live rescale: its steps come as control rows or from a rescale channel");
        }
        if (channel != null && (!realTime || batches.length > 0)) {
            throw new IllegalArgumentException(
                    "a rescale channel's folder is for a real-time query's SHARED_STATE, LEARNER or HANDOFF");
        }
        return new Rescale(width, routings, batches, live || channel != null, handoff, channel);
    }

    /** Switches due in batch {@code batchId}: STOP_THE_WORLD's with a switch batch at or below it. */
    int dueBy(long batchId) {
        int due = 0;
        while (due < switchBatches.length && switchBatches[due] <= batchId) {
            due++;
        }
        return due;
    }
}
