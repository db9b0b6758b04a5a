"""A streaming run: validate, stack, topic, replay, topology, end of input, record.

    validate everything (grouping, dataset, options, broker, topic)     preflight.py, before Spark starts
    start the topology (one query), the dead-letter reader and the observer        lifecycle.py
    replay the dataset into the input topic (unless it already holds it)           input.py
    wait until every input offset is processed and its dead letters written        lifecycle.py, progress.py
    write the end-of-input record to <run>.control (watermark past the last window)
    wait until the last worker and aggregator windows are closed and written
    final tick; run.json, summary.json, metrics.parquet; summary table             summary.py

The settings of a run are declared once (options.py, on top of `bench.topology.config`'s
`TopologySettings`); `settings_doc.py` writes docs/settings.md from them. A --rescale run's driver
side is rescaling.py, the live outputs (InfluxDB, distribution topic) outputs.py, the session's
warm-up warm_up.py.
"""

from bench.run.input import (BackgroundReplay, consumed, describe_input, end_offsets, ensure_topics, input_conditions,
                             record_input, send_end_of_input)
from bench.run.lifecycle import StreamRun, run_stream
from bench.run.options import CommandSettings, RunOptions
from bench.run.preflight import Prepared, RunError, default_master, default_topic, prepare
from bench.run.progress import task_slots
from bench.run.summary import COLUMNS, format_table, input_header, missed_batches, summarize, summary_row
from bench.run.warm_up import WARM_UP_RECORDS, measures_latency, warm_up

__all__ = [
    "COLUMNS", "WARM_UP_RECORDS", "BackgroundReplay", "CommandSettings", "Prepared", "RunError", "RunOptions",
    "StreamRun", "consumed", "default_master", "default_topic", "describe_input", "end_offsets", "ensure_topics",
    "format_table", "input_conditions", "input_header", "measures_latency", "missed_batches", "prepare",
    "record_input", "run_stream", "send_end_of_input", "summarize", "summary_row", "task_slots", "warm_up",
]
