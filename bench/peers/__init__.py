"""The peers: the same work on other stream processors, each a module of the Maven reactor beside
this package (`storm/`, `flink/`, `kstreams/`, built by `bench.stack.maven`), driven from here.

- `bench.peers.storm`: Apache Storm 2.8.3 running the reference topology (spout, splitter, worker
  bolts, aggregator) with the Java groupings: build it, fit its executors to the machine, run it on
  a topic and read its result. `make perf PEERS=storm` and `make capacity PEERS=storm` use it.
- `bench.peers.rescale`: Apache Flink (key groups: stop-with-savepoint, the adaptive scheduler) and
  Kafka Streams (warm-up tasks) rescaling the harness's per-key worker state on the same records:
  run a peer, read its trace and final state, and compute its figures the same way for both.
  `make rescale-bench PEERS=flink,kstreams` uses it. What both peers share on the Java side (the
  command line's pairs, the schedule's syntax, the lines and files they leave) is one module,
  `contract/`.

What each peer runs and measures: docs/performance.md ("The Storm peer") and docs/rescaling.md.
"""
