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
