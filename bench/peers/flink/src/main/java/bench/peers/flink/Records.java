package bench.peers.flink;

import bench.peers.contract.PeerOutputs;
/**
 * The records the job passes between its operators, as Flink POJOs (public fields, a public no-arg
 * constructor: Flink's PojoSerializer, no Kryo).
 */
public final class Records {
    private Records() {}

    /** A record's id in its topic: its partition and offset, {@code partition << 40 | offset}. */
    public static long id(int partition, long offset) {
        return ((long) partition << 40) | offset;
    }

    /** A Kafka record as the source reads it. */
    public static class Raw {
        /** The record's id ({@link Records#id}). */
        public long id;
        /** The record's value, UTF-8 decoded; null when the record had none. */
        public String value;
        /** The record's Kafka timestamp (CreateTime), epoch ms. */
        public long tsMs;
        /** Header {@code release_ms}, epoch ms; -1 when absent or not a number. */
        public long releaseMs;

        public Raw() {}

        public Raw(long id, String value, long tsMs, long releaseMs) {
            this.id = id;
            this.value = value;
            this.tsMs = tsMs;
            this.releaseMs = releaseMs;
        }
    }

    /** One tuple for the workers: the record's key, its count (1 without a count field) and times. */
    public static class Tuple {
        /** The id of its record ({@link Records#id}). */
        public long id;
        public String key;
        public long count;
        /** Kafka timestamp, epoch ms. */
        public long tsMs;
        /** Epoch ms the replayer released it, -1 when unknown. */
        public long releaseMs;

        public Tuple() {}

        public Tuple(long id, String key, long count, long tsMs, long releaseMs) {
            this.id = id;
            this.key = key;
            this.count = count;
            this.tsMs = tsMs;
            this.releaseMs = releaseMs;
        }
    }

    /** One key's worker state (the harness's): kept in Flink's ValueState. */
    public static class KeyCounts {
        /** Tuples of the key. */
        public long count;
        /** Sum of the tuples' counts. */
        public long sum;
        /** Smallest Kafka timestamp, epoch ms. */
        public long firstTsMs;
        /** Largest Kafka timestamp, epoch ms. */
        public long lastTsMs;

        public KeyCounts() {}
    }

    /** One row of state.csv: a key's state with its owner (operator index) and unit (key group). */
    public static class StateRow {
        public String key;
        public int worker;
        public int unit;
        public long count;
        public long sum;
        public long firstTsMs;
        public long lastTsMs;

        public StateRow() {}

        /** The row of {@code key} with state {@code s}, owned by {@code worker}, in key group {@code unit}. */
        public static StateRow of(String key, int worker, int unit, KeyCounts s) {
            StateRow r = new StateRow();
            r.key = key;
            r.worker = worker;
            r.unit = unit;
            r.count = s.count;
            r.sum = s.sum;
            r.firstTsMs = s.firstTsMs;
            r.lastTsMs = s.lastTsMs;
            return r;
        }

        /** This row as the peers' state.csv row. */
        public PeerOutputs.StateRow contractRow() {
            return new PeerOutputs.StateRow(key, worker, unit, count, sum, firstTsMs, lastTsMs);
        }
    }
}
