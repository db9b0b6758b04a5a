"""The cost model of a rescale: what each step costs on the virtual clock.

Every parameter is named after what it measures, carries its unit in the name and has a default.
`restart_ms` and `transfer_per_entry_ms` are measured on the Spark topology (part 2,
docs/rescaling.md "Calibration of the cost model from Spark"); the others are plausible for one machine and could not be
measured there (same section, one reason each). The simulator charges:

- a worker `tuple_work_ms` per tuple it processes (its FIFO queue decides the latency);
- a state transfer between workers `transfer_ms(entries, bytes)`;
- a snapshot / checkpoint write and a restore / load read at the storage rates, in parallel per
  worker (the slowest worker decides);
- `restart_ms` for a job restart (STOP_THE_WORLD);
- `control_latency_ms` for every control message (barrier, SHUTDOWN, FINAL, whitelist, rebalance);
- changelog replay at `replay_entries_per_s` (LEARNER), with the switch when the lag is at most
  `acceptable_lag_entries` at a probing rebalance every `probing_interval_ms`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

ENTRY_OVERHEAD_BYTES = 32
"""Bytes of one state entry besides the key and the payload: count, sum, first and last time
(4 x 8 bytes)."""


@dataclass(frozen=True)
class CostModel:
    """Named costs of a rescale (defaults: `restart_ms` and `transfer_per_entry_ms` measured on Spark,
    PySpark 4.2, `local[2]` on 2 shared cores, 2026-11-25; the others plausible for one machine).

    tuple_work_ms: a worker's time per tuple, ms (0.02 ms = 50 000 tuples/s per worker).
    transfer_per_entry_ms: worker-to-worker transfer, per state entry, ms. Measured on Spark: writing
        a rescale's entries to `<run>.state` took 0.0020 +- 0.0015 ms more per entry (least squares
        over 89-4,307 entries, 6 runs; the fixed ~0.53 s is in `restart_ms`).
    transfer_bytes_per_s: worker-to-worker transfer rate, bytes/s.
    checkpoint_write_bytes_per_s: snapshot / checkpoint write rate of one worker, bytes/s.
    checkpoint_read_bytes_per_s: restore / load read rate of one worker, bytes/s.
    checkpoint_per_entry_ms: per state entry written or read (serialisation), ms. Not measurable on
        Spark here: the savepoint (state data source) took 1.4-2.8 s for 89 and for 3,664-4,307
        entries alike (slope -0.4 +- 1.2 ms per entry of the slowest worker); the default is kept.
    restart_ms: stopping and redeploying the job at the new parallelism, ms: everything in a
        STOP_THE_WORLD pause that does not grow with the state. 34 900 = the median pause of Spark's
        STOP_THE_WORLD (VNODE 10 -> 12, 5,000 NYC_FLIGHTS records, cost 0, 3 runs, load average
        4.5-11.8) minus the model's other charges (5 ms): finishing the interrupted batch 12.7 s,
        `repartition` 8.5 s, the first batch after the restart 10.9 s, savepoint 2.0 s, transfer
        0.5 s, `start()` 0.8 s (medians). Most of it is Spark's fixed cost per micro-batch on 2 cores;
        part 1's 3000 (a Flink-like restart of seconds) is `--cost restart_ms=3000`.
    control_latency_ms: one control message (barrier, SHUTDOWN, FINAL, whitelist, rebalance), ms.
    replay_entries_per_s: a learner's changelog replay rate, entries/s (Kafka Streams restore).
    acceptable_lag_entries: a learner becomes the owner when its changelog lag is at most this
        (Kafka Streams `acceptable.recovery.lag`, default 10 000).
    probing_interval_ms: time between probing rebalances that check the learners' lag (Kafka
        Streams `probing.rebalance.interval.ms` is 600 000; 10 000 here so that a switch fits a
        run of minutes -- set it to 600000 for Kafka Streams' own value).
    router_stagger_ms: router s receives a control message `s * router_stagger_ms` later than
        router 0 (routers at different points of their input); 0 by default.
    """

    tuple_work_ms: float = 0.02
    transfer_per_entry_ms: float = 0.002
    transfer_bytes_per_s: float = 100e6
    checkpoint_write_bytes_per_s: float = 200e6
    checkpoint_read_bytes_per_s: float = 400e6
    checkpoint_per_entry_ms: float = 0.005
    restart_ms: float = 34_900.0
    control_latency_ms: float = 5.0
    replay_entries_per_s: float = 20_000.0
    acceptable_lag_entries: int = 10_000
    probing_interval_ms: float = 10_000.0
    router_stagger_ms: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"cost {f.name} must be a number >= 0, got {value!r}")
        for name in ("transfer_bytes_per_s", "checkpoint_write_bytes_per_s",
                     "checkpoint_read_bytes_per_s", "replay_entries_per_s", "probing_interval_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"cost {name} must be > 0, got {getattr(self, name)!r}")

    @classmethod
    def from_assignments(cls, values: dict) -> CostModel:
        """A model with some defaults replaced (`--cost name=value`).

        Raises: ValueError: an unknown name (the message lists the valid ones) or a bad value.
        """
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown cost parameter(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        return cls(**{k: float(v) if k != "acceptable_lag_entries" else int(v) for k, v in values.items()})

    def to_dict(self) -> dict:
        return asdict(self)

    # -- the charges -------------------------------------------------------------------------------
    def transfer_ms(self, entries: int, nbytes: int) -> float:
        """Worker-to-worker state transfer of `entries` entries holding `nbytes` bytes, ms."""
        return entries * self.transfer_per_entry_ms + 1000.0 * nbytes / self.transfer_bytes_per_s

    def write_ms(self, entries: int, nbytes: int) -> float:
        """One worker writing `entries` / `nbytes` to a snapshot or checkpoint, ms."""
        return entries * self.checkpoint_per_entry_ms + 1000.0 * nbytes / self.checkpoint_write_bytes_per_s

    def read_ms(self, entries: int, nbytes: int) -> float:
        """One worker restoring / loading `entries` / `nbytes` from a snapshot or storage, ms."""
        return entries * self.checkpoint_per_entry_ms + 1000.0 * nbytes / self.checkpoint_read_bytes_per_s

    def replay_ms(self, entries: int) -> float:
        """A learner replaying `entries` changelog records, ms."""
        return 1000.0 * entries / self.replay_entries_per_s


def entry_bytes(key: str, state_bytes: int) -> int:
    """Size of one key's state entry: the key's UTF-8 bytes, the four numbers and the payload."""
    return len(key.encode("utf-8", "replace")) + ENTRY_OVERHEAD_BYTES + state_bytes
