package bench.topology;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * The rescale channel's barrier as the routers of a real-time query keep it (SHARED_STATE, LEARNER
 * and HANDOFF in Real-Time Mode; bench/topology/rescale_channel.py has the folder's files,
 * docs/rescaling.md "SHARED_STATE in real-time mode" and "HANDOFF in real-time mode" the protocols).
 *
 * <p>A micro-batch query waits at a barrier in its channel source's {@code latestOffset}, between
 * two batches. Real-Time Mode refuses that source, and its tasks run for the whole real-time batch,
 * so the routers keep the barrier themselves, at the start of a batch: the first router call of
 * real-time batch X in a JVM claims every requested epoch that has no barrier for batch X + 1
 * ({@code barrier-<e>.json}, {@code {"wall_ms", "switch_batch"}}, created atomically: the first
 * claim of any JVM holds), and every call of a batch at or after an epoch's switch batch waits until
 * the driver has published the epoch ({@code epoch-<e>.jsonl}) and routes by its switch. A claim
 * for the next batch, never the current one, keeps a batch under one routing: a router of the
 * current batch may have routed before the request was written. The driver reads the workers'
 * state of batch X once it commits, while batch X + 1 waits. A HANDOFF's steps are published
 * without a request: the first router call that finds one claims batch X + 1 for it, and no router
 * waits, since the step is there already.
 *
 * <p>What is due is kept per (folder, batch) in the JVM, so the files are read at the first call
 * of each batch, and again at a call with control rows: the driver writes a wake record to the
 * state-transfer topic after each request (bench/topology/state_transfer.py), so an epoch requested
 * while no tuple flows, or after every router's first call of the batch, is claimed at once. A batch
 * run again after a failure finds the same files and routes alike.
 */
public final class ChannelBarrier {
    /** How long a router waits for the driver to publish an epoch, ms (the channel source's {@code WAIT_S}). */
    static final long WAIT_MS = 900_000L;
    private static final Map<String, Due> DUE = new HashMap<>();

    private ChannelBarrier() {}

    /**
     * What the routers of one real-time batch route by: the highest switch of the epochs due by it
     * ({@code switchNo}, 0 for none) and the router records ({@code slot} -1) of those epochs that
     * carry a HANDOFF step ({@code steps}, in epoch order).
     */
    record Due(long batchId, int switchNo, List<JsonNode> steps) {}

    /**
     * The epochs due by real-time batch {@code batchId}: those whose switch batch is at or below
     * it, once all are published.
     *
     * @param folder the rescale channel's folder (TopologyConfig.rescale_channel_dir)
     * @param fresh read the folder again even if this batch has read it (a call with control rows:
     *     the driver's wake record, which follows a request, or the transfers of an epoch)
     * @param handoff the rescale is a HANDOFF: its steps are published without a request, and a
     *     published epoch with no barrier is claimed for batch X + 1 as a requested one is (one
     *     batch, every router's, applies each step); otherwise a published epoch without a barrier
     *     (LEARNER's warm-up) is no router's business
     * @throws IllegalStateException the driver gave the run up ({@code abort}) or published nothing
     *     within {@link #WAIT_MS} of the barrier
     * @throws UncheckedIOException the folder cannot be read or a barrier written
     */
    public static synchronized Due due(String folder, long batchId, boolean fresh, boolean handoff) {
        Due cached = DUE.get(folder);
        if (!fresh && cached != null && cached.batchId() == batchId) {
            return cached;
        }
        Path dir = Paths.get(folder);
        for (int epoch : epochs(dir, "request")) {
            claim(dir, epoch, batchId + 1);
        }
        if (handoff) {
            for (int epoch : epochs(dir, "epoch")) {
                claim(dir, epoch, batchId + 1);
            }
        }
        int switchNo = 0;
        List<JsonNode> steps = new ArrayList<>();
        for (int epoch : epochs(dir, "barrier")) {
            JsonNode barrier = read(dir.resolve("barrier-" + epoch + ".json"));
            if (barrier.path("switch_batch").asLong(Long.MAX_VALUE) <= batchId) {
                for (JsonNode record : await(dir, epoch)) {
                    switchNo = Math.max(switchNo, record.path("switch").asInt(0));
                    if (record.has(Handoff.CONTROL_KEY)) {
                        steps.add(record);
                    }
                }
            }
        }
        Due due = new Due(batchId, switchNo, List.copyOf(steps));
        DUE.put(folder, due);
        return due;
    }

    /** Epoch {@code epoch}'s barrier at {@code switchBatch}, unless it has one. */
    private static void claim(Path dir, int epoch, long switchBatch) {
        Path barrier = dir.resolve("barrier-" + epoch + ".json");
        if (Files.exists(barrier)) {
            return;
        }
        String text = "{\"wall_ms\":" + System.currentTimeMillis() + ",\"switch_batch\":" + switchBatch + "}";
        try {
            Path tmp = Files.createTempFile(dir, ".barrier-" + epoch + ".", ".tmp");
            try {
                Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
                Files.createLink(barrier, tmp); // atomic, and refused when another claim came first
            } catch (FileAlreadyExistsException e) {
                // another JVM's router claimed it first: its claim holds
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("rescale channel " + dir + ": cannot write the barrier of epoch " + epoch,
                    e);
        }
    }

    /** The router records ({@code slot} -1) of published epoch {@code epoch}, waiting for its publication. */
    private static List<JsonNode> await(Path dir, int epoch) {
        Path published = dir.resolve("epoch-" + epoch + ".jsonl");
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!Files.exists(published)) {
            if (Files.exists(dir.resolve("abort"))) {
                throw new IllegalStateException(
                        "rescale epoch " + epoch + ": the driver gave the run up at the barrier");
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("rescale epoch " + epoch, new TimeoutException(
                        "not published within " + WAIT_MS / 1000 + " s of the barrier"));
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("rescale epoch " + epoch + ": interrupted at the barrier", e);
            }
        }
        try (Stream<String> lines = Files.lines(published, StandardCharsets.UTF_8)) {
            return lines.filter(line -> !line.isBlank()).map(ChannelBarrier::parse)
                    .filter(record -> record.path("slot").asInt(0) == -1).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The epochs of the folder's {@code <prefix>-<e>.json*} files, ascending. */
    private static List<Integer> epochs(Path dir, String prefix) {
        List<Integer> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (Stream<Path> files = Files.list(dir)) {
            files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix + "-"))
                    .forEach(n -> out.add(Integer.parseInt(n.substring(prefix.length() + 1, n.indexOf('.')))));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        out.sort(null);
        return out;
    }

    private static JsonNode read(Path path) {
        try {
            return parse(Files.readString(path, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static JsonNode parse(String text) {
        try {
            return GroupingStage.JSON.readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("unreadable rescale channel record " + text, e);
        }
    }
}
