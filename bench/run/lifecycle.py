"""One micro-batch streaming run from its topics to its summary (`StreamRun`; `bench.run.stream.run_stream` picks it).

    open      run.json (first attempt facts), the run's topics, the outputs, the input topic's
              state, a rescale run's driver, the observer
    session   Spark (unless given one), the dead-letter reader, the progress listener
    start     the query (or a rescale left half done), the observer's ticks, the replay
    drive     until every input offset is processed and its dead letters written, the end-of-input
              record sent and the last windows closed (rescales on the way)
    stop      the query, the listener, the dead letters, the last tick, the outputs, the workers'
              state, the session: whatever happened before
    finish    summary.json and run.json

A run stopped in the middle (Ctrl-C, a killed driver) resumes from its checkpoint when started
again with the same run id: Spark replays the uncommitted batch, the sinks are idempotent per batch
id, and the observer reloads what it had journalled.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

from bench.logs import RunLogs
from bench.observer.distribution_topic import DistributionTopic
from bench.observer.listener import ProgressListener
from bench.observer.observer import Observer
from bench.observer.resources import ResourceProbe, jvm_heap, jvm_pid
from bench.results.record import RunRecord
from bench.run.input import BackgroundReplay, consumed, ensure_topics, input_conditions, replayed, send_end_of_input
from bench.run.outputs import InfluxOutput, influx_writer
from bench.run.preflight import Prepared, RunError, resumes
from bench.run.progress import drain_listener, end_of_input_again, task_slots, wait_first_batch, windows_closed
from bench.run.rescaling import RescaleSpans, rescale_record, rescaler_for
from bench.run.summary import summarize
from bench.topology import job, state_transfer
from bench.topology.config import TopologyConfig
from bench.topology.dead_letters import DeadLetters
from bench.topology.session import build_session, connector_record
from bench.topology.state_layout import slot_table
from bench.topology.worker_state import read_final_state
from producers import inspect_topic, replay
from producers.resume import first_timestamp_ms
from producers.broker import end_offsets

POLL_S = 0.5
"""How often the driver loop looks at the query's progress, s."""


class StreamRun:
    """One grouping's run on Kafka and Spark; `run()` takes its steps in order (module docstring)."""

    def __init__(self, prepared: Prepared, *, spark=None, log=print, logs: RunLogs):
        self.prepared, self.options, self.log, self.logs = prepared, prepared.options, log, logs
        self.config: TopologyConfig = prepared.config
        """The running query's configuration (a STOP_THE_WORLD rescale restarts it with another)."""
        self.spark, self.own_session = spark, spark is None
        self.record = RunRecord(prepared.run_id, self.config.results_dir.parent, connector_record)
        self.resumed = resumes(self.config)
        self.tags = {"run_id": prepared.run_id, "grouping": self.config.grouping, "dataset": self.config.dataset,
                     "workers": str(self.config.workers)}
        self.status, self.error = "completed", None
        self.topology = None
        self.input_state = None
        """The input topic as this attempt found it (`producers.inspect_topic`; None: --no-replay)."""
        self.replaying: BackgroundReplay | None = None
        """A rescale run's live replay, beside the driver loop."""
        self.replay_summary = None
        self.ends: dict[int, int] | None = None
        """The input topic's end offsets, once the replay (if any) has handed over every record."""
        self.drove = False
        """The driver loop returned (no exception on its way out)."""
        self.rescaler = None
        self.spans: RescaleSpans | None = None
        self.slots = None
        self.state_record = None
        self.dead_letters = None

    def run(self) -> dict:
        self.open()
        self.open_session()
        try:
            self.start()
            self.drive()
        except KeyboardInterrupt:
            self.status = "interrupted"
            self.log(f"interrupted: resume with --run-id {self.prepared.run_id}")
        except RunError as e:
            self.status, self.error = "failed", str(e)
        finally:
            self.stop()
        return self.finish()

    # -- open -------------------------------------------------------------------------------------

    def open(self) -> None:
        """run.json as soon as each fact is known (a killed attempt leaves what it had), the topics,
        the outputs, the input topic's state, a rescale run's driver, the observer."""
        prepared, o, config = self.prepared, self.options, self.config
        self.base_run = {"kind": "stream", "master": o.master, "rate": o.rate, "limit": o.limit,
                         "partitions": o.partitions, "observer_tick_s": o.observer_tick_s,
                         "influx_url": prepared.influx_url, **config.to_dict()}
        self.base_run["input"] = input_conditions(prepared)
        self.dataset_info = {"name": prepared.dataset.name, "fingerprint": prepared.dataset.fingerprint()}
        self.attempts = self._previous_attempts() if self.resumed else []
        # records_replayed stays as written if this attempt is killed; the next attempt's
        # records_in_topic_before tells how far it got.
        self.attempt = {"attempt": len(self.attempts) + 1,
                        "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "topic_state": None, "records_in_topic_before": None, "records_replayed": 0}
        self.attempts.append(self.attempt)
        self.write_run_json()
        topics = {config.topic: o.partitions, config.control_topic: 1, config.aggregates_topic: 1,
                  config.dlq_topic: 1, config.distribution_topic: 1}
        if config.realtime:
            topics[config.partials_topic] = 1
        if config.transfers:
            topics[state_transfer.topic(config.run_id)] = 1
        ensure_topics(config.bootstrap_servers, topics)
        outputs = self._open_outputs()
        if prepared.replay_total is not None:
            self.input_state = inspect_topic(config.bootstrap_servers, config.topic, prepared.replay_total,
                                             o.partitions)
            self.attempt.update(topic_state=self.input_state.state, records_in_topic_before=self.input_state.present)
            self.write_run_json()
        # Latency is meaningful only when this attempt replays the whole topic while consuming it (a
        # resumed replay stamps the first attempt's intended times).
        live_input = self.input_state is not None and self.input_state.state in ("absent", "empty")
        if o.rescale:
            self.rescaler = rescaler_for(config, o, self.log)
            self.spans = RescaleSpans(self.rescaler, lambda: self.observer.batches)
        self.observer = Observer(prepared.run_id, config.worker_space, config.results_dir, tags=self.tags,
                                 live_input=live_input, outputs=outputs, record=self.record,
                                 latency_warmup_s=o.latency_warmup_s, rescale_spans=self.spans)

    def write_run_json(self) -> None:
        self.record.write_run("stream", self.base_run, self.dataset_info,
                              {"resumed": self.resumed, "experiment_id": self.experiment_id, "attempts": self.attempts})

    @property
    def experiment_id(self) -> str:
        return self.options.experiment_id or self.prepared.run_id

    def _previous_attempts(self) -> list[dict]:
        """The `attempts` of an earlier run.json of this run (a resume), oldest first."""
        try:
            return list(json.loads((self.record.path / "run.json").read_text()).get("attempts") or [])
        except (OSError, ValueError):
            return []

    def _open_outputs(self) -> tuple:
        """The observer's outputs: InfluxDB (unless --no-influx), the distribution topic."""
        outputs = []
        self.influx = influx_writer(self.prepared, self.tags, self.log)
        if self.influx is not None:
            outputs.append(InfluxOutput(self.influx, self.prepared.influx_url, lambda: self.observer.rows, self.log))
        self.distribution = DistributionTopic(self.config.bootstrap_servers, self.config.distribution_topic,
                                              self.prepared.run_id)
        outputs.append(lambda row: self.distribution.send({**self.tags, **row}))
        return tuple(outputs)

    def start_session(self) -> None:
        """Spark (unless the caller gave a session) and its task slots, recorded in run.json; the
        observer's resource probe (the JVM's and the driver's memory, the checkpoint's size)."""
        if self.own_session:
            self.log(f"starting Spark ({self.options.master}) ...")
            self.spark = build_session(self.options.master, self.config.aggregators)
        self.slots = task_slots(self.spark)
        self.observer.resources = ResourceProbe(jvm_pid(self.spark), self.config.checkpoint_dir, jvm_heap(self.spark))
        self.base_run["task_slots"] = self.slots
        self.write_run_json()

    def open_session(self) -> None:
        """Spark (`start_session`), the dead-letter reader, the progress listener."""
        config = self.config
        self.start_session()
        if self.slots < config.workers:
            self.log(f"warning: {self.slots} Spark task slots for {config.workers} workers "
                     f"({self.spark.sparkContext.master}): workers wait for a slot, so the run measures the slots, "
                     "not the grouping (the default master gives each worker a slot)")
        self.dead_letters = DeadLetters(self.spark, config, self.prepared.splitter_sql)
        self.listener = ProgressListener((self.observer.on_progress, self.dead_letters.on_progress),
                                         job.main_query_name(config))
        self.listener.attach(self.spark)

    # -- start and drive --------------------------------------------------------------------------

    def start_query(self, config: TopologyConfig, once: bool = False):
        return job.start(self.spark, config, self.prepared.splitter_sql, self.observer, once=once)

    def run_event(self, topology):
        """A rescale that stops the query (STOP_THE_WORLD): the query it restarts."""
        self.spans.stopping_since = int(time.time() * 1000)
        try:
            return self.rescaler.run_event(self.spark, topology, self.start_query, self.observer, self.log)
        finally:
            self.spans.stopping_since = None

    def start(self) -> None:
        """The query (after the rescale a killed driver left half done), the observer, `replay_missing`."""
        rescaler = self.rescaler
        if rescaler is not None and not rescaler.live and rescaler.next_index() is not None \
                and rescaler.journal.event(rescaler.next_index()):
            rescaler.anchor_clock()
            self.topology = self.run_event(None)
            self.config = rescaler.config
        else:
            self.topology = self.start_query(self.config)
        self.observer.start(self.options.observer_tick_s)
        self.replay_missing()

    def replay_missing(self) -> None:
        """The replay of what the input topic lacks. RunError if it holds records not of the input."""
        state, o, config = self.input_state, self.options, self.config
        if state is not None and state.state == "mismatch":
            raise RunError(str(state.mismatch_error(config.bootstrap_servers)))
        if state is None or state.state == "complete":
            return
        if state.state == "prefix":
            self.log(f"{state.describe()}: resuming the replay with the {state.missing:,} missing records "
                     "(same partitions and intended timestamps; idempotent producer)")
        else:
            self.wait_ready()
            self.log(f"replaying {self.prepared.dataset.name} (limit {o.limit}, rate {o.rate or 'max'}) "
                     f"into {config.topic} ...")
        args = (self.prepared.dataset, config.topic, config.bootstrap_servers)
        kwargs = dict(partitions=o.partitions, rate=o.rate, limit=o.limit, progress=o.progress, resume=True,
                      processes=o.producers)
        if self.rescaler is None:
            self.replay_summary = replayed(replay(*args, **kwargs), config.topic, self.attempt)
        else:
            # A rescale's time is on the input's clock, and a live input does not wait for a rescale:
            # the driver follows the batches, and stops the query, while the records arrive.
            self.replaying = BackgroundReplay(replay, *args, **kwargs)

    def wait_ready(self) -> None:
        """Before a live replay: until the query has run its first (empty) micro-batch, or a resumed
        query waits for data (`wait_first_batch`). Its start-up (state stores, Python workers: 6-35 s
        on two busy cores) is not a latency of the records."""
        wait_first_batch(self.topology, self.listener, self.options.timeout_s, resumed=self.resumed)

    def input_ends(self) -> dict[int, int] | None:
        """The input topic's end offsets per partition, or None while records are still being
        replayed into it."""
        if self.ends is None:
            if self.replaying is not None:
                if not self.replaying.done():
                    return None
                self.replay_summary = replayed(self.replaying.result(), self.config.topic, self.attempt)
            ends = end_offsets(self.config.bootstrap_servers, self.config.topic)
            if ends is None:
                raise RunError(f"the input topic {self.config.topic!r} is gone from Kafka")
            self.ends = ends
        return self.ends

    def drive(self) -> None:
        """Follow the query to the end; a rescale that stops the query restarts it and goes on."""
        self.status = self.follow()
        while self.status == "rescale":
            self.topology = self.run_event(self.topology)
            self.config = self.rescaler.config
            self.status = self.follow()
        self.drove = True

    def follow(self) -> str:
        """Wait for: all input processed and its dead letters written -> end-of-input record -> last
        windows closed ("completed"). Returns "rescale" when a committed batch reaches the next
        rescale's time of a protocol that stops the query, "stopped" after `stop_after_batches`; a
        live protocol's rescale goes on with `advance()` after every poll."""
        deadline = time.monotonic() + self.options.timeout_s
        end_sent_at = self._end_of_input_again()
        while True:
            self._check(deadline)
            progress = self.listener.latest
            data_batches = sum(1 for b in self.observer.batches.values() if b["rows"] > 0)
            if self.options.stop_after_batches is not None and data_batches >= self.options.stop_after_batches:
                return "stopped"
            rescaler = self.rescaler
            if rescaler is not None and rescaler.next_index() is not None and data_batches:
                rescaler.anchor_clock()
                if rescaler.live:
                    rescaler.advance(self.spark, self.observer, self.log)
                elif rescaler.due(self.observer):
                    return "rescale"
            if end_sent_at is None:
                end_sent_at = self._end_of_input(progress)
            elif windows_closed(progress, self.config, end_sent_at):
                return "completed"
            time.sleep(POLL_S)

    def _check(self, deadline: float) -> None:
        """RunError if the query, the dead-letter writer or Kafka failed, or the time is up."""
        if self.logs.outage is not None:
            self.logs.outage.check()
        if self.topology.exception() is not None:
            raise RunError(f"the query failed: {self.topology.exception()}")
        if self.dead_letters is not None and self.dead_letters.error is not None:
            e = self.dead_letters.error
            raise RunError(f"writing dead letters failed: {type(e).__name__}: {e}")
        if time.monotonic() > deadline:
            raise RunError(f"the run did not finish within --timeout-s {self.options.timeout_s:g}")

    def _end_of_input_again(self) -> int | None:
        """A resumed attempt whose checkpoint consumed the whole input, with no rescale event under way
        (it drives batches itself, and must end before the input does): `progress.end_of_input_again`."""
        ends = self.input_ends() if self.resumed and self.listener.latest is None else None
        if ends is None or (self.rescaler is not None and self.rescaler.next_index() is not None):
            return None
        sent = first_timestamp_ms(self.config.bootstrap_servers, self.config.control_topic)
        return end_of_input_again(self.config, ends, sent, self.log)

    def _end_of_input(self, progress: dict | None) -> int | None:
        """Once the input is consumed and its dead letters written (and no rescale waits for its
        barrier), the end-of-input record's timestamp, sent; None until then."""
        ends = self.input_ends()
        rescale_waits = self.rescaler is not None and self.rescaler.reached(self.observer)
        if ends is None or rescale_waits or not consumed(progress, self.config.topic, ends) \
                or not self.dead_letters.covers(ends):
            return None
        max_ts = max((b.get("max_ts_ms") or 0 for b in self.observer.batches.values()), default=0)
        if max_ts == 0 and any(ends.values()):
            return None  # the listener has not delivered the batches yet
        end_sent_at = max_ts + self.config.close_horizon_ms
        self.log(f"input consumed ({sum(ends.values())} records); closing the last windows ...")
        self.observer.tick()
        send_end_of_input(self.config.bootstrap_servers, self.config.control_topic, end_sent_at)
        return end_sent_at

    # -- stop and finish --------------------------------------------------------------------------

    def stop(self) -> None:
        """Whatever happened: stop the query and the observer, write what is left, free the session."""
        self.observer.stop()
        if self.rescaler is not None and self.rescaler.live:
            self.rescaler.channel.abort()  # a query paused at a barrier would wait for the channel
        self.stop_topology()
        drain_listener(self.observer, self.config)
        self.listener.detach(self.spark)
        self.dead_letters.close()
        e = self.dead_letters.error
        self._fail(e is not None and f"dead letters: {type(e).__name__}: {e}")
        self.close_outputs()

    def stop_topology(self) -> None:
        """Stop the running queries; the run fails with a query's failure."""
        if self.topology is not None:
            failure = self.topology.exception()
            self.topology.stop()
            self._fail(failure is not None and f"{type(failure).__name__}: {failure}")

    def close_outputs(self) -> None:
        """The last tick, InfluxDB's and the distribution topic's last writes, the workers' state, the
        session (when the run started it)."""
        self.observer.tick()
        if self.influx is not None:
            backfilled = self.influx.finish(list(self.observer.rows))
            if backfilled:
                self.log(f"InfluxDB: {backfilled:,} points written again from the run record after failed writes")
        self.distribution.close()
        if self.status == "completed" and self.drove and self.config.worker_state:
            self.state_record = self._write_worker_state()
        if self.own_session:
            self.spark.stop()

    def _fail(self, error: str | bool) -> None:
        """The run failed with `error` (False: it did not), unless an earlier error says why."""
        if error and self.error is None:
            self.status, self.error = "failed", error

    def _write_worker_state(self) -> dict:
        """`results/<run_id>/state.parquet`: the workers' per-key state at the last committed batch,
        read from the checkpoint with Spark's state data source. Returns its size (rows, keys)."""
        config, slots = self.config, slot_table(self.config.worker_space, self.config.partitions)
        state = read_final_state(self.spark, str(config.state_checkpoint), {s: w for w, s in enumerate(slots)})
        self.record.write_state(state)
        return {"rows": len(state), "keys": int(state["key"].nunique()), "state_partitions": config.partitions}

    def realtime_facts(self) -> dict | None:
        """What summary.json says of a real-time run only (`bench.run.realtime`); None here."""
        return None

    def finish(self) -> dict:
        """summary.json, and run.json with the attempt's status and the replay's summary."""
        self.attempt["status"] = self.status
        summary = summarize(self.prepared, self.observer, self.replay_summary, self.status, self.error, self.influx,
                            self.distribution, self.resumed, self.realtime_facts())
        summary["attempts"] = self.attempts
        summary["logs"] = self.logs.summary()
        summary["task_slots"] = self.slots
        if self.state_record is not None:
            summary["worker_state"] = self.state_record
        if self.rescaler is not None:
            summary["rescale"] = rescale_record(self.rescaler, self.observer, self.options, self.tags,
                                                self.prepared.influx_url, self.prepared.influx_database)
        replay_record = self.replay_summary.to_dict() if self.replay_summary else None
        self.record.write_run("stream", self.base_run, {**self.dataset_info, "replay": replay_record},
                              {"resumed": self.resumed, "status": self.status, "experiment_id": self.experiment_id,
                               "attempts": self.attempts})
        self.record.write_summary(summary)
        return summary
