package bench.peers.contract;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A rescale schedule in the harness's syntax ({@code groupings/rescaling/schedule.py}):
 * {@code 2499ms:12,3749ms:10}, events {@code TIME:COUNT} separated by commas, TIME a non-negative
 * number with unit {@code ms}, {@code s} (the default when none is given) or {@code m}, on the
 * Kafka-timestamp clock (ms since {@code --t0-ms}). The peers rescale to a worker count (Flink's
 * parallelism, Kafka Streams' instances), so only the COUNT form is accepted (not the harness's
 * {@code +ID/-ID} worker-id form).
 */
public final class RescaleSchedule {
    private static final Pattern TIME = Pattern.compile("^\\s*(\\d+(?:\\.\\d+)?)\\s*(ms|s|m)?\\s*$");

    private RescaleSchedule() {}

    /**
     * One rescale request.
     *
     * @param atMs    when it is due: ms of Kafka time after t0
     * @param workers the new worker count, at least 1
     */
    public record Event(long atMs, int workers) {}

    /**
     * Parses a schedule.
     *
     * @param text the schedule; null or blank: no rescale
     * @return the events, in increasing time
     * @throws IllegalArgumentException with a one-line message: a bad time, a count that is not an
     *     integer >= 1, an empty item, two events at the same time or not in increasing time
     */
    public static List<Event> parse(String text) {
        List<Event> events = new ArrayList<>();
        if (text == null || text.isBlank()) {
            return events;
        }
        for (String raw : text.split(",", -1)) {
            String item = raw.strip();
            int colon = item.indexOf(':');
            if (item.isEmpty() || colon < 0) {
                throw new IllegalArgumentException("bad rescale item '" + item + "' in '" + text
                        + "': expected TIME:COUNT, e.g. 2499ms:12");
            }
            long at = timeMs(item.substring(0, colon));
            String what = item.substring(colon + 1).strip();
            int count;
            if (what.startsWith("+") || what.startsWith("-")) {
                throw new IllegalArgumentException("bad rescale event '" + item + "': worker ids to add or remove "
                        + "(+ID/-ID) are not supported, the peers rescale to a worker count: give a count, e.g. 12");
            }
            try {
                count = Integer.parseInt(what);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad rescale event '" + item
                        + "': after TIME: give a worker count, e.g. 12");
            }
            if (count < 1) {
                throw new IllegalArgumentException("bad rescale event '" + item + "': cannot rescale to "
                        + count + " workers (need >= 1)");
            }
            if (!events.isEmpty() && events.get(events.size() - 1).atMs() >= at) {
                throw new IllegalArgumentException("rescale events must be in strictly increasing time: '"
                        + item + "' is not after the previous one");
            }
            events.add(new Event(at, count));
        }
        return events;
    }

    /**
     * {@code 150s}, {@code 2499ms}, {@code 2.5m} or {@code 150} (seconds) to ms, rounded.
     *
     * @throws IllegalArgumentException not a non-negative number with an optional unit ms, s or m
     */
    static long timeMs(String text) {
        Matcher m = TIME.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("bad rescale time '" + text.strip()
                    + "': expected a number with unit ms, s or m, e.g. 2499ms");
        }
        double unit = m.group(2) == null ? 1000 : switch (m.group(2)) {
            case "ms" -> 1;
            case "s" -> 1000;
            default -> 60_000;
        };
        return Math.round(Double.parseDouble(m.group(1)) * unit);
    }
}
