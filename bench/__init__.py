"""Benchmark harness for stream groupings: stack control, the Spark topology, the observer, results and the CLI."""
