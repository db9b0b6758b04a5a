"""Perf section "producer": records/s of `producers` into a real Kafka broker.

Needs a broker. It uses `$BENCH_KAFKA_BOOTSTRAP` or `127.0.0.1:$BENCH_KAFKA_PORT` (9092) when that
answers within 5 s; otherwise it starts a private stack with `bench.stack` (temporary folder, free
loopback ports) and stops it at the end. If neither works the section is skipped with a message.

Cases (each the median of 5 timed runs, after one untimed warm-up run of each; runs of the
producer and of its baseline alternate, each into a fresh 10-partition topic):

- unlimited replay of 1,000,000 pre-built records (`producers.produce_records`: idempotent, record
  i to partition i mod 10, CreateTime = hand-over time, header `event_ms` when the dataset has an
  event time), for COUNTRY_SKEW_R80 (20-byte records, no event time) and US_FLIGHTS_3M (95-byte
  records with the `event_ms` header). Timed from the first hand-over to the end of the flush
  (every record acknowledged).
  Baseline, same run, same payloads: a plain confluent-kafka loop, `produce(topic, value)` with the
  default partitioner and `poll(0)` every 4,096 records, then `flush()`; same idempotent config
  and linger. For US_FLIGHTS_3M the baseline loop also sends the same `event_ms` headers (a header
  costs librdkafka about 40% of its rate; a third, informative row compares with a header-less
  loop). Target: ratio >= 0.7 and >= 200,000 records/s.
- pacing accuracy: 200,000 records at `--rate 20000` (10 s); the achieved rate (records / time
  from schedule start to the last hand-over) with the send-lag percentiles in the note.
"""

from __future__ import annotations

import os
import socket
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Producer

from bench.perf._harness import Rate, Row
from bench.stack import Stack, StackConfig
from datasets import get_dataset
from producers import BrokerUnreachable, check_broker, ensure_topic, produce_records
from producers.replay import producer_config

SECTION = "producer"
RECORDS = 1_000_000
REPEATS = 5
PARTITIONS = 10
PACED_RATE = 20_000
PACED_SECONDS = 10
TARGET_RATE = 200_000.0
TARGET_RATIO = 0.7


def _default_bootstrap() -> str:
    return os.environ.get("BENCH_KAFKA_BOOTSTRAP") or f"127.0.0.1:{os.environ.get('BENCH_KAFKA_PORT', '9092')}"


@contextmanager
def broker():
    """A reachable bootstrap address (an existing broker, or a private stack started here), or None."""
    bootstrap = _default_bootstrap()
    try:
        check_broker(bootstrap, timeout_s=5)
        reachable = True
    except BrokerUnreachable:
        reachable = False
    if reachable:
        yield bootstrap
        return
    print(f"producer: no broker at {bootstrap}; starting a private stack with bench.stack")
    with tempfile.TemporaryDirectory(prefix="perf-producer-stack-") as folder:
        kafka, controller, influx, rpc = _free_ports(4)
        config = StackConfig(
            stack_dir=Path(folder), cache_dir=StackConfig.from_env().cache_dir, kafka_port=kafka,
            kafka_controller_port=controller, influx_port=influx, influx_rpc_port=rpc,
        )  # fmt: skip
        stack = Stack(config)
        try:
            stack.up(log=lambda _m: None)
        except Exception as e:  # noqa: BLE001 - report and skip the section
            print(f"producer: no broker at {bootstrap} and a private stack did not start ({e}); section skipped")
            stack.down(log=lambda _m: None)
            yield None
            return
        try:
            yield config.bootstrap_servers
        finally:
            stack.down(log=lambda _m: None)


def _free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def plain_loop(bootstrap: str, topic: str, values: list[bytes], headers: list | None = None) -> float:
    """The baseline: a plain confluent-kafka produce loop; returns records/s incl. the flush.
    With ``headers`` (one per value), each record carries its header, as the producer sends them."""
    cfg = producer_config(bootstrap, 30)
    cfg.pop("delivery.report.only.error")  # plain: the client's defaults for reports
    p = Producer(cfg)
    p.list_topics(topic, timeout=30)
    produce, poll = p.produce, p.poll
    t = time.perf_counter()
    if headers is None:
        for i, v in enumerate(values):
            try:
                produce(topic, v)
            except BufferError:
                poll(0.01)
                produce(topic, v)
            if not i & 4095:
                poll(0)
    else:
        for i, (v, h) in enumerate(zip(values, headers)):
            try:
                produce(topic, v, headers=h)
            except BufferError:
                poll(0.01)
                produce(topic, v, headers=h)
            if not i & 4095:
                poll(0)
    left = p.flush(120)
    elapsed = time.perf_counter() - t
    if left:
        raise RuntimeError(f"baseline: {left} records not delivered")
    return len(values) / elapsed


def ours(bootstrap: str, topic: str, records: list, **kw) -> tuple[float, object]:
    s = produce_records(records, topic, bootstrap, partitions=PARTITIONS, progress=False, **kw)
    if not s.ok:
        raise RuntimeError(f"producer run not ok: {s.human()}")
    return s.records / (s.duration_s + s.flush_s), s


def _compare(bootstrap: str, label: str, records: list, tag: str, with_headers: bool = False) -> list[Row]:
    """Our producer beside the plain loop (and, ``with_headers``, beside a plain loop that sends
    the same ``event_ms`` headers): alternating runs, medians."""
    values = [r.value for r in records]
    headers = [{"event_ms": str(r.event_ms)} for r in records] if with_headers else None
    admin = check_broker(bootstrap)
    ours_runs, plain_runs, plain_h_runs = [], [], []
    for k in range(REPEATS + 1):  # run 0 is the warm-up of each
        stamp = f"{tag}-{k}-{int(time.time())}"
        topics = [f"perf-plain-{stamp}", f"perf-plainh-{stamp}", f"perf-ours-{stamp}"]
        for t in topics[:2] if with_headers else topics[:1]:
            ensure_topic(admin, t, PARTITIONS)
        rb = plain_loop(bootstrap, topics[0], values)
        rh = plain_loop(bootstrap, topics[1], values, headers) if with_headers else None
        ro, _ = ours(bootstrap, topics[2], records)
        if k:
            plain_runs.append(rb)
            ours_runs.append(ro)
            if rh is not None:
                plain_h_runs.append(rh)
        admin.delete_topics(topics)
    rate = Rate(statistics.median(ours_runs), ours_runs)
    rows = []
    if with_headers:
        base_h = Rate(statistics.median(plain_h_runs), plain_h_runs)
        rows.append(_row(label + " vs plain loop with the same headers", rate, base_h))
        rows.append(Row.measured(
            SECTION, label + " vs plain loop without headers (cost of the header)", rate, "records/s",
            baseline_rate=Rate(statistics.median(plain_runs), plain_runs), note="informative: no target",
        ))  # fmt: skip
    else:
        rows.append(_row(label, rate, Rate(statistics.median(plain_runs), plain_runs)))
    return rows


def _row(case: str, rate: Rate, base: Rate) -> Row:
    row = Row.measured(SECTION, case, rate, "records/s", baseline_rate=base, target=TARGET_RATE,
                       note=f"target: ratio >= {TARGET_RATIO} and >= {TARGET_RATE:,.0f}/s")  # fmt: skip
    if row.ratio is not None and row.ratio < TARGET_RATIO:
        row.meets_target = False
        row.note += "; ratio below target"
    return row


def run() -> list[Row]:
    with broker() as bootstrap:
        if bootstrap is None:
            return []
        tag = str(os.getpid())
        rows = []
        country = list(get_dataset("COUNTRY_SKEW_R80", length=RECORDS).records())
        rows += _compare(bootstrap, "replay 1M COUNTRY_SKEW_R80 records, unlimited", country, f"c{tag}")
        del country
        flights = list(get_dataset("US_FLIGHTS_3M").records(RECORDS))
        rows += _compare(bootstrap, "replay 1M US_FLIGHTS_3M (event_ms header)", flights, f"f{tag}", with_headers=True)
        del flights

        n = PACED_RATE * PACED_SECONDS
        paced = list(get_dataset("COUNTRY_SKEW_R80", length=n, seed=1).records())
        paced_topic = f"perf-paced-{tag}-{int(time.time())}"
        _, s = ours(bootstrap, paced_topic, paced, rate=PACED_RATE)
        check_broker(bootstrap).delete_topics([paced_topic])
        lag = s.lag or {}
        rows.append(
            Row.measured(
                SECTION, f"pacing --rate {PACED_RATE:,} for {PACED_SECONDS} s: achieved rate",
                Rate(s.records_per_s, [s.records_per_s]), "records/s", target=PACED_RATE * 0.99,
                note=(f"lag p50 {lag.get('p50_ms', float('nan')):.3f} ms, p99 {lag.get('p99_ms', float('nan')):.3f} ms, "
                      f"max {lag.get('max_ms', float('nan')):.1f} ms; target: within 1% of the rate"),
            )  # fmt: skip
        )
        return rows
