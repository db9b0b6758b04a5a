"""A streaming-query listener that hands each micro-batch's progress, as a plain dict, to the observer
and to the dead-letter reader (`bench.topology.dead_letters`).

Spark delivers progress events asynchronously, after the batch committed, with the batch id and the
observed metrics of every `DataFrame.observe` in the query (exact per batch). The observer
de-duplicates by batch id, so a batch re-run after a restart is counted once.

The listener is a py4j proxy of Spark's own `PythonStreamingQueryListener` interface, registered
directly with the session's `StreamingQueryManager`, and takes each progress as its JSON form in one
call into the JVM. pyspark's `StreamingQueryListener` wrapper first builds a Python object of the
event field by field (dozens of calls into the JVM per event), and for each observed metric it
resolves `PythonSQLUtils` by its short name, which py4j does by trying every imported Java
package in turn, a failed class lookup each. In a cost-0 pipeline run
(three observed metrics per batch), Java Flight Recorder put 67 of the listener thread's 74
samples in that class lookup, and the thread used about 0.9 s of CPU in 10 s of batches on two
cores (2026-11-24).
"""

from __future__ import annotations

import json
import logging

log = logging.getLogger(__name__)

LISTENER_INTERFACE = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"


class ProgressListener:
    """Forwards the progress of the query named `query_name` (all queries if None) to each of
    `sinks` (callables taking the progress dict, the JSON form of `StreamingQueryProgress`), in
    order. `attach(spark)` registers it with a session, `detach(spark)` removes it.

    `latest` is the progress with the highest batch id that has been through every sink (None
    before the first), so a reader of `latest` finds the sinks up to date (unless one raised).
    The run's driver loop polls it instead of `StreamingQuery.lastProgress`. That one serializes
    the whole progress to JSON in the JVM at every call; with the observed metrics of a W = 10
    SHUFFLE run (key-worker pairs of every splitter) a poll every 0.5 s took 15 % of the driver's
    main thread (py-spy, 2026-11-22).
    """

    def __init__(self, sinks, query_name: str | None = None):
        self.sinks = tuple(sinks)
        self.query_name = query_name
        self.latest: dict | None = None
        self._jlistener = None

    # -- registration -------------------------------------------------------------------------------
    def attach(self, spark) -> None:
        """Register with `spark`'s streaming query manager (a classic, non-Connect session)."""
        # deferred: pyspark takes about 1 s to import; the listener is unit-tested without a Spark session
        from pyspark.java_gateway import ensure_callback_server_started

        gateway = spark.sparkContext._gateway
        ensure_callback_server_started(gateway)
        self._jlistener = gateway.jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(self)
        spark._jsparkSession.streams().addListener(self._jlistener)

    def detach(self, spark) -> None:
        """Remove from `spark`'s streaming query manager; a no-op if not attached."""
        if self._jlistener is not None:
            spark._jsparkSession.streams().removeListener(self._jlistener)
            self._jlistener = None

    # -- the Java interface (called by the JVM through py4j) ----------------------------------------
    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        try:
            self.on_progress_json(event.progress().json())
        except Exception:  # an exception here would only be logged by the JVM's listener bus
            log.exception("could not handle a progress event")

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

    class Java:
        implements = [LISTENER_INTERFACE]

    # -- what a progress event does -----------------------------------------------------------------
    def on_progress_json(self, text: str) -> None:
        """Hand one progress (its JSON text) to the sinks, then make it `latest` if it is the newest.
        A sink that raises is logged, and `latest` still moves to the batch."""
        try:
            progress = json.loads(text)
            if self.query_name is None or progress.get("name") == self.query_name:
                try:
                    for sink in self.sinks:
                        sink(progress)
                finally:  # a failing sink must not stop the run's driver loop from seeing the batch
                    if self.latest is None or progress.get("batchId", -1) >= self.latest.get("batchId", -1):
                        self.latest = progress
        except Exception:
            log.exception("could not handle a progress event")
