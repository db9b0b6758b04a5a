"""The run's input and its Kafka topics: recording a topic before the runs (`record_input`), a live
replay beside the driver loop (`BackgroundReplay`), whether a batch consumed the input's end
offsets (`producers.broker.end_offsets`), the end-of-input record, and how a run got its input
(`input_conditions`)."""

from __future__ import annotations

import threading

from bench.logs import RunLogs
from bench.run.preflight import Prepared, RunError
from bench.topology.sink import KafkaWriter
from bench.topology.spout import batch_offsets
from producers import check_broker, ensure_topic, replay


def record_input(prepared: list[Prepared], log=print) -> None:
    """Unpaced runs read a recorded topic: replay each missing topic of `prepared` once, as fast as
    possible and before any run starts, then mark every run as reading it (no run competes with
    the replay, and every grouping reads the very same records). The producer's client logs go to
    the first reading run's `logs/driver.log` (`bench.logs.RunLogs`), as during a run: a broker
    that has just started makes librdkafka warn ("Coordinator load in progress: retrying")."""
    done: set[str] = set()
    for p in prepared:
        topic = p.config.topic
        if not p.topic_exists and topic not in done:
            log(f"recording {p.dataset.name} (limit {p.options.limit}) into {topic} before the runs ...")
            with RunLogs(p.config.results_dir / "logs", p.config.bootstrap_servers, log):
                summary = replay(p.dataset, topic, p.config.bootstrap_servers, partitions=p.options.partitions,
                                 rate=None, limit=p.options.limit, progress=p.options.progress, resume=True,
                                 processes=p.options.producers)
            check_replay(summary, topic)
            done.add(topic)
        p.topic_exists = True


def replayed(summary, topic: str, attempt: dict):
    """The replay's summary, recorded in the attempt (`check_replay`)."""
    attempt["records_replayed"] = summary.records
    check_replay(summary, topic)
    return summary


def check_replay(summary, topic: str) -> None:
    """Raises KeyboardInterrupt if a Ctrl-C stopped the replay (it flushed what it had handed over:
    the run is interrupted, and resumable), RunError if a record was not delivered."""
    if summary.interrupted:
        raise KeyboardInterrupt
    if not summary.ok:
        raise RunError(f"the replay into {topic} did not complete: {summary.errors[:3]}")


class BackgroundReplay:
    """`producers.replay(*args, **kwargs)` in a daemon thread: a rescale run's live input, replayed
    while the driver loop follows the batches. A driver that ends meanwhile (Ctrl-C, a failure) does
    not wait for it; the replay is idempotent and resumable, so the run's next attempt sends only
    the records that are missing (`resume=True`)."""

    def __init__(self, replay, *args, **kwargs):
        self._replay, self._args, self._kwargs = replay, args, kwargs
        self._result = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="replay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._replay(*self._args, **self._kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the driver by result()
            self._error = e

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self):
        """The ReplaySummary; raises what the replay raised. Call once `done()`."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


def input_conditions(prepared: Prepared) -> dict:
    """How a run gets its input: `live` (it replays the dataset at `rate` records/s while consuming it:
    paced, open loop), `live-unpaced` (it replays as fast as possible while consuming it), or
    `recorded` (it reads a topic recorded before it started, as fast as the topology can)."""
    if prepared.topic_exists:
        return {"mode": "recorded", "rate": None, "paced": False, "topic": prepared.config.topic}
    rate = prepared.options.rate
    return {"mode": "live" if rate else "live-unpaced", "rate": rate, "paced": bool(rate),
            "topic": prepared.config.topic}


def describe_input(conditions: dict | None) -> str:
    """`live 500 rec/s`, `live unpaced`, `recorded`, or `unknown` (a record from before this field)."""
    if not conditions:
        return "unknown"
    if conditions["mode"] == "live":
        return f"live {conditions['rate']:g} rec/s"
    return "live unpaced" if conditions["mode"] == "live-unpaced" else "recorded"


# -- Kafka helpers --------------------------------------------------------------------------------

def ensure_topics(bootstrap: str, topics: dict[str, int]) -> None:
    """Create each missing topic with its partition count (`producers.ensure_topic`)."""
    admin = check_broker(bootstrap, timeout_s=15)
    for topic, partitions in topics.items():
        ensure_topic(admin, topic, partitions)


def send_end_of_input(bootstrap: str, topic: str, timestamp_ms: int) -> None:
    """The end-of-input record on the control topic (`bench.topology.spout`): its timestamp moves the
    watermark past the last windows. RunError if it could not be written within 30 s."""
    w = KafkaWriter(bootstrap)
    w.producer.produce(topic, key=b"end-of-input", value=b"end-of-input", timestamp=timestamp_ms)
    if w.producer.flush(30):
        raise RunError(f"could not write the end-of-input record to {topic}")


def consumed(progress: dict | None, topic: str, ends: dict[int, int]) -> bool:
    """Whether the batch of `progress` read `topic` up to `ends` (next offset per partition)."""
    got = batch_offsets(progress, topic, "endOffset")
    return all(got.get(p, 0) >= end for p, end in ends.items() if end > 0)
