"""One real-time run (`RealtimeRun`): the steps of `bench.run.lifecycle.StreamRun` with the two
queries of `bench.topology.realtime` in place of the micro-batch query.

    session   Spark, with a task slot for every task of the real-time query (RunError if fewer)
    start     the aggregator query, then the real-time query; once all its tasks run, the replay
    drive     the input audit once every record is in the topic (`bench.topology.audit`: records,
              malformed records as dead letters, tuples, weight); once the latest partials hold
              every tuple, the end-of-input record on `<run>.partials`; once the aggregator has
              closed the last windows (and, with `--worker-state`, a committed real-time batch
              has read the whole input), "completed"
    stop      both queries, the dead letters' writer, the last tick and the outputs

A run killed at any moment resumes with its run id: the real-time query from its last checkpoint
(the start of its batch), writing some updates again, which the aggregator leaves out; the
aggregator query from its own (`bench.topology.realtime_aggregator`).
"""

from __future__ import annotations

import time

from bench.observer.batches import state_store_figures
from bench.observer.listener import ProgressListener
from bench.run.lifecycle import POLL_S, StreamRun
from bench.run.preflight import RunError
from bench.topology import realtime
from bench.topology.audit import audit_input
from bench.topology.checkpoint_log import has_read
from bench.topology.sink import DeadLetterSink, KafkaWriter

STALL_S = 120.0
"""After the input audit, a run whose latest partials gain no tuple for this long, while short of
the input's, fails instead of waiting for `--timeout-s`."""
TASKS_TIMEOUT_S = 120.0
"""How long the real-time query's tasks may take to start before a live replay, s."""


class RealtimeRun(StreamRun):
    """One grouping's run in real-time mode (module text)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.audit: dict | None = None
        self.end_sent = False
        self.waited = False
        self.state_wait_logged = False
        self.transfer_ends: tuple[int, dict[int, int]] | None = None
        """(events journalled, `<run>.state`'s end offsets then), for `_transfers_committed`."""
        self.rescale_waits_logged: set[int] = set()

    def open_session(self) -> None:
        """Spark (`start_session`), the input audit's dead-letter writer, and a progress listener
        for the real-time query, whose batches' end gives its state stores' figures."""
        config = self.config
        self.start_session()
        self.dlq = DeadLetterSink(config.run_id, config.results_dir, config.bootstrap_servers, config.dlq_topic)
        self.listener = ProgressListener((self._realtime_progress,), realtime.query_names(config)[0])
        self.listener.attach(self.spark)

    def _realtime_progress(self, progress: dict) -> None:
        if self.topology is not None:
            self.topology.aggregator.query_state = state_store_figures(progress)

    def start_query(self, config, once: bool = False, with_realtime: bool = True):
        # Every half observer tick: each tick sees the latest partials; a micro-batch of the
        # aggregator costs about 0.3 s of Spark's planning and scheduling however few its rows.
        return realtime.start(self.spark, config, self.prepared.splitter_sql, self.observer,
                              self.options.observer_tick_s / 2, with_realtime=with_realtime)

    def run_event(self, topology):
        """A STOP_THE_WORLD event (`bench.rescale.stop_the_world_realtime`): the real-time query
        stopped and started again beside the aggregator, which reads on; `topology` None (a driver
        resumed in the middle of the event): the aggregator is started first."""
        if topology is None:
            topology = self.topology = self.start_query(self.config, with_realtime=False)

        def start_realtime(config):
            topology.start_realtime(self.spark, config, self.prepared.splitter_sql)
            return topology

        self.spans.stopping_since = int(time.time() * 1000)
        try:
            return self.rescaler.run_event(self.spark, topology, start_realtime, self.observer, self.log)
        finally:
            self.spans.stopping_since = None

    def start(self) -> None:
        needed, config = self.config.realtime_task_slots, self.config
        if self.slots < needed:
            raise RunError(f"real-time mode needs {needed} task slots (the real-time query's "
                           f"{config.realtime_query_tasks} tasks run for its whole batch, and its input audit and "
                           f"aggregator run beside them), the session has {self.slots} "
                           f"({self.spark.sparkContext.master}): use --master local[{needed}] or a cluster with as "
                           "many cores")
        super().start()

    def replay_missing(self) -> None:
        """`StreamRun.replay_missing` once every task of the real-time query runs (`wait_ready`)."""
        self.wait_ready()
        super().replay_missing()

    def wait_ready(self) -> None:
        """Until every task of the real-time query runs, before the replay or the input audit: records
        sent before they poll would wait for its start (planning, 40 tasks, the state stores), which
        is not a latency of the records, and no other job may take their slots before they have
        them. RunError if the query failed or they did not start within TASKS_TIMEOUT_S."""
        if self.waited:
            return
        tracker = self.spark.sparkContext.statusTracker()
        wanted = self.config.realtime_query_tasks
        deadline = time.monotonic() + TASKS_TIMEOUT_S
        while True:
            if self.topology.exception() is not None:
                raise RunError(f"the real-time query failed: {self.topology.exception()}")
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            if sum(s.numActiveTasks for s in stages if s is not None) >= wanted:
                self.waited = True
                return
            if time.monotonic() > deadline:
                raise RunError(f"the real-time query's {wanted} tasks did not all start within {TASKS_TIMEOUT_S:g} s")
            time.sleep(0.2)

    def follow(self) -> str:
        """Wait for: the input in the topic -> its audit -> every tuple in the latest partials -> the
        end-of-input record -> the last windows closed ("completed"); "stopped" after
        `stop_after_batches` aggregator batches with tuples."""
        deadline = time.monotonic() + self.options.timeout_s
        aggregator = self.topology.aggregator
        seen, seen_at = -1, time.monotonic()
        while True:
            self._check(deadline)
            data_batches = sum(1 for b in self.observer.batches.values() if b["rows"] > 0)
            if self.options.stop_after_batches is not None and data_batches >= self.options.stop_after_batches:
                return "stopped"
            if self.audit is None and (ends := self.input_ends()) is not None:
                self.audit = audit_input(self.spark, self.config, self.prepared.splitter_sql, ends, self.dlq)
                self.observer.audited = {"records": self.audit["records"], "malformed": self.audit["malformed"]}
                self.log(f"input in the topic: {self.audit['records']:,} records, {self.audit['tuples']:,} tuples "
                         f"({self.audit['malformed']:,} malformed); waiting for the last tuples ...")
            rescaler = self.rescaler
            if rescaler is not None and rescaler.next_index() is not None and data_batches:
                rescaler.anchor_clock()
                if rescaler.live:
                    rescaler.advance(self.spark, self.observer, self.log)
                elif rescaler.due(self.observer):
                    return "rescale"
                self._log_rescale_wait()
            if aggregator.closed_all and self._state_committed():
                return "completed"
            # an event whose time has come waits for its rescale: the end-of-input record would
            # close the windows before the switch
            waits = rescaler is not None and rescaler.reached(self.observer)
            if self.audit is not None and not self.end_sent and not waits:
                if aggregator.tuples >= self.audit["tuples"]:
                    self.log("every tuple is in the latest partials; closing the last windows ...")
                    self.observer.tick()
                    self._send_end_of_input()
                elif aggregator.tuples != seen:
                    seen, seen_at = aggregator.tuples, time.monotonic()
                elif time.monotonic() - seen_at > STALL_S:
                    raise RunError(f"the real-time query stopped short: {aggregator.tuples:,} of the input's "
                                   f"{self.audit['tuples']:,} tuples reached the aggregator, none for {STALL_S:g} s "
                                   "(a tuple later than the watermark allows is dropped by the worker windows)")
            time.sleep(POLL_S)

    def _log_rescale_wait(self) -> None:
        """Once per event: its time has come, and it waits for the real-time batch under way to commit
        (the barrier is a committed batch: bench/rescale/stop_the_world_realtime.py and
        shared_state_realtime.py)."""
        index = self.rescaler.next_index()
        if index not in self.rescale_waits_logged and self.rescaler.reached(self.observer):
            self.rescale_waits_logged.add(index)
            self.log(f"rescale {self.rescaler.events[index].label()}: waiting for the real-time batch under way to "
                     f"commit (batches of {self.config.realtime_batch_s} s) ...")

    def _state_committed(self) -> bool:
        """Whether the checkpoint holds the workers' final state: always without `--worker-state`;
        with it, once a committed real-time batch has read the whole input. Real-Time Mode commits
        its state at the end of each real-time batch only (`--realtime-batch-s`), so the run waits
        for the batch under way to end."""
        if not self.config.worker_state:
            return True
        if has_read(self.config.state_checkpoint, self.config.topic, self.input_ends()) and self._transfers_committed():
            return True
        if not self.state_wait_logged:
            self.log(f"the last windows are closed; waiting for the real-time batch to end and commit the workers' "
                     f"state (batches of {self.config.realtime_batch_s} s) ...")
            self.state_wait_logged = True
        return False

    def _transfers_committed(self) -> bool:
        """Whether a committed real-time batch has read every state-transfer record (`<run>.state`):
        always without a rescale. An event after the whole input was read restarts the query with its
        transfers still to install, and the state of the batch before holds the keys at their old
        owners (CI, 2026-12-06: a resumed rescale run's state.parquet at W = 6 after the event to 5)."""
        if self.rescaler is None or not self.rescaler.journal.event(0):
            return True
        events = len(self.rescaler.journal.events)
        if self.transfer_ends is None or self.transfer_ends[0] != events:  # read again after a new event only
            try:
                self.transfer_ends = (events, self.rescaler.transfer_ends())
            except RuntimeError as e:
                raise RunError(str(e)) from None
        return self.rescaler.transfers_read(self.transfer_ends[1])

    def _send_end_of_input(self) -> None:
        writer = KafkaWriter(self.config.bootstrap_servers)
        try:
            writer.send(self.config.partials_topic, [(b"end-of-input", realtime.end_of_input_record())])
        except RuntimeError as e:
            raise RunError(f"could not write the end-of-input record: {e}") from None
        finally:
            writer.close()
        self.end_sent = True

    def stop(self) -> None:
        self.observer.stop()
        self.stop_topology()
        self.listener.detach(self.spark)
        self.dlq.close()
        self.close_outputs()

    def realtime_facts(self) -> dict:
        aggregator = getattr(self.topology, "aggregator", None)
        return {"batch_s": self.config.realtime_batch_s, "audit": self.audit,
                "late_updates": aggregator.late_updates if aggregator is not None else None,
                "stale_updates": aggregator.stale_updates if aggregator is not None else None}


