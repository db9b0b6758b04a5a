"""One streaming run in the execution mode its configuration names (`run_stream`): the micro-batch
topology (`bench.run.lifecycle.StreamRun`) or the real-time one (`bench.run.realtime.RealtimeRun`)."""

from __future__ import annotations

from bench.logs import RunLogs
from bench.run.lifecycle import StreamRun
from bench.run.preflight import Prepared
from bench.run.realtime import RealtimeRun


def run_stream(prepared: Prepared, *, spark=None, log=print) -> dict:
    """Run one grouping to the end (or to `stop_after_batches`). Returns the summary dict.

    Spark's, PySpark's workers' and the clients' logs go to `results/<run_id>/logs/` (`bench.logs`);
    the summary's `logs` block counts their lines; a Kafka outage is two console lines."""
    config = prepared.config
    run = RealtimeRun if config.realtime else StreamRun
    with RunLogs(config.results_dir / "logs", config.bootstrap_servers, log) as logs:
        return run(prepared, spark=spark, log=log, logs=logs).run()
