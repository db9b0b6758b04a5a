"""`make perf`: micro-benchmarks of the harness, one section module per area.

Section contract (how to add one, e.g. `producer.py`):

- A section is a module `bench/perf/<name>.py` whose name is listed in
  `bench.perf.__main__.SECTIONS`.
- It exposes `run() -> list[Row]` (`bench.perf._harness.Row`): one row per measured case, with the
  median rate over repetitions (`median_rate`), its unit, a baseline measured in the same run, the
  ratio to it, and the target (None when there is none). `run()` prepares its own inputs, keeps
  setup and warm-up (JIT compilation, caches) out of the timed body, and never asserts on speed.
- It imports nothing heavy at module level that the other sections do not need, and needs no
  running service unless its docstring says so.

The runner (`python -m bench.perf [--only NAME ...]`) prints each section's table and writes all
rows with the machine's description to `results/perf/<UTC timestamp>.json`.
"""
