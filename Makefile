# Stream-grouping benchmark harness. `make help` lists the targets.
#
# Everything the project needs is installed by the targets themselves, into .venv/ (Python) and
# .cache/ (Kafka and Spark jars from Maven Central, influxd built with Go, datasets). A second run of
# an install step does nothing.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Bench parameters: each passes one flag of `python -m bench run` (docs/settings.md, generated from
# the settings' dataclasses; tests/bench/test_settings.py checks this block against them). ARGS passes
# any other option verbatim.
GROUPING ?= DYNAMIC_KEY
GROUPINGS ?=
DATASET  ?=
WORKERS  ?=
SPLITTERS ?=
COST_MS  ?=
RATE     ?=
LIMIT    ?=
RUN_ID   ?=
REPEAT   ?=
RESCALE  ?=
PROTOCOL ?=
MODE     ?=
ARGS     ?=
BENCH_OPTS = $(if $(DATASET),--dataset $(DATASET)) $(if $(WORKERS),--workers $(WORKERS)) \
             $(if $(SPLITTERS),--splitters $(SPLITTERS)) $(if $(COST_MS),--cost-ms $(COST_MS)) \
             $(if $(RATE),--rate $(RATE)) $(if $(LIMIT),--limit $(LIMIT)) \
             $(if $(RUN_ID),--run-id $(RUN_ID)) $(if $(REPEAT),--repeat $(REPEAT)) \
             $(if $(RESCALE),--rescale $(RESCALE)) $(if $(PROTOCOL),--protocol $(PROTOCOL)) \
             $(if $(MODE),--mode $(MODE)) $(ARGS)

.DEFAULT_GOAL := help
.PHONY: help install venv up down status test test-fast fuzz chaos nemesis bench bench-all capacity perf produce sweep rescale rescale-bench dashboards compare report clean

help:
	@echo "make bench GROUPING=DYNAMIC_KEY [MODE=realtime]  run the main job end to end (installs and starts what it needs)"
	@echo "make bench GROUPING=VNODE RESCALE=30s:12 [PROTOCOL=STOP_THE_WORLD|SHARED_STATE|LEARNER|HANDOFF]  rescale the running topology (docs/rescaling.md)"
	@echo "make bench-all [GROUPINGS=A,B]    every grouping (default all) on the same topic, one table"
	@echo "make capacity [GROUPINGS=..] [COST_MS=0,1] [PEERS=storm] maximum sustainable throughput per grouping, both modes [and Storm] (rate steps)"
	@echo "make test                         every test: unit and integration (real Kafka, Spark, InfluxDB, Chromium, Maven); the 20 slowest"
	@echo "make test-fast                    the tests that need no service (no Kafka, Spark, InfluxDB, Maven, browser), under 2 minutes"
	@echo "make fuzz                         the input parsers' property tests (Hypothesis), 10,000 generated examples each"
	@echo "make nemesis [SEED=] [FAULTS=20] [MODE=]  one run of 15 min under random faults from a seed, checked (docs/faults.md)"
	@echo "make chaos                        fault injection: kill driver/broker/influxd, Ctrl-C, bad records (docs/faults.md)"
	@echo "make up | down | status           the local stack: Kafka (KRaft) and InfluxDB 1.8 on 127.0.0.1"
	@echo "make perf [PEERS=storm]           benchmarks: routing, producer, pipeline, stages, simulator [, harness/Storm per grouping]"
	@echo "make produce DATASET=... TOPIC=... replay a dataset into Kafka"
	@echo "make compare [RUNS=...]           figures + table comparing runs (default: latest run per grouping)"
	@echo "make report [RUN=...]             a self-contained HTML report of one run or a comparison"
	@echo "make dashboards                   regenerate the Grafana dashboards' JSON from dashboards/*.py"
	@echo "make sweep                        simulate the groupings over W = 5..100, one figure per dataset"
	@echo "make rescale                      simulate rescales: KEY/KEY_GROUP/VNODE x the four protocols, one figure + table"
	@echo "make rescale-bench [PEERS=flink,kstreams] the four protocols on Spark x VNODE/KEY_GROUP, out and in, 3 runs each, beside the simulator [and Flink, Kafka Streams]"
	@echo "make install                      Python venv + JVM jars + influxd (done by the targets above)"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is required (found %s)" % sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@touch $@

venv: $(STAMP)

install: $(STAMP)
	$(PY) -m bench.stack install
	$(PY) -m datasets fetch

up: install
	$(PY) -m bench.stack up

down:
	@if [ -x $(PY) ]; then $(PY) -m bench.stack down; else echo "nothing to stop (no $(VENV))"; fi

status: $(STAMP)
	$(PY) -m bench.stack status

# The tiers: tests/tiers.py marks each test from the fixtures it uses; the fast tier is every test
# with none of these markers; a test of its own that takes over FAST_LIMIT seconds is listed at the end
# (a report, not a failure: a test's time depends on the machine's load).
FAST_TIER  := not (integration or spark or browser or maven or notebook or slow)
FAST_LIMIT ?= 5

test: install
	bash scripts/install-debian-packages.sh
	$(PY) -m pytest --durations=20 --fast-tier-limit=$(FAST_LIMIT)

test-fast: $(STAMP)
	$(PY) -m pytest -m "$(FAST_TIER)" --fast-tier-limit=$(FAST_LIMIT)

# The property tests of the user-file readers and of the splitter's decoding, with the "fuzz" profile
# (tests/conftest.py); `make test` runs the same tests with Hypothesis's default number of examples.
FUZZ_TESTS := tests/datasets/test_parser_properties.py tests/datasets/test_splitter_fuzz.py

fuzz: install
	$(PY) -m pytest $(FUZZ_TESTS) --hypothesis-profile=fuzz --hypothesis-show-statistics --fast-tier-limit=3600

chaos: install
	BENCH_CHAOS=1 $(PY) -m pytest tests/chaos -v
	BENCH_CHAOS=1 $(PY) -m pytest tests/topology/test_rescale_stop_the_world.py tests/topology/test_rescale_in_the_running_query.py tests/topology/test_realtime.py -v -k "killed or realtime-learner"

# One long run under random faults from a seed (docs/faults.md, "make nemesis"): SEED= replays a
# history, FAULTS= (default 20), MODE=, GROUPING= (default KEY_GROUP, one that rescales).
SEED   ?=
FAULTS ?=
nemesis: up
	$(PY) -m bench nemesis $(if $(SEED),--seed $(SEED)) $(if $(FAULTS),--faults $(FAULTS)) \
	  $(if $(MODE),--mode $(MODE)) $(if $(filter command line,$(origin GROUPING)),--grouping $(GROUPING)) \
	  $(if $(DATASET),--dataset $(DATASET)) $(if $(RATE),--rate $(RATE)) $(if $(WORKERS),--workers $(WORKERS)) \
	  $(if $(RUN_ID),--run-id $(RUN_ID)) $(ARGS)

bench: up
	$(PY) -m bench run --grouping $(GROUPING) $(BENCH_OPTS)

bench-all: up
	$(PY) -m bench run-all $(if $(GROUPINGS),--groupings $(GROUPINGS)) $(BENCH_OPTS)

# PEERS=storm: also the Storm peer, on the same topic (make perf) or the same paced records (make
# capacity), per grouping (docs/performance.md).
PEERS ?=
RATES ?=
capacity: up
	$(PY) -m bench capacity $(if $(GROUPINGS),--groupings $(GROUPINGS)) $(if $(COST_MS),--cost-ms $(COST_MS)) \
	  $(if $(DATASET),--dataset $(DATASET)) $(if $(WORKERS),--workers $(WORKERS)) $(if $(RATES),--rates $(RATES)) \
	  $(if $(REPEAT),--repeat $(REPEAT)) $(if $(PEERS),--peers $(PEERS)) $(ARGS)

perf: up
	$(PY) -m bench.perf $(if $(PEERS),--peers $(PEERS))

SPEED      ?=
PARTITIONS ?=
produce: up
	@test -n "$(DATASET)" -a -n "$(TOPIC)" || { echo "usage: make produce DATASET=NAME TOPIC=NAME [RATE=records/s | SPEED=xK] [PARTITIONS=10] [LIMIT=n] [ARGS=...]"; exit 2; }
	$(PY) -m producers --dataset $(DATASET) --topic $(TOPIC) $(if $(RATE),--rate $(RATE)) $(if $(SPEED),--speed $(SPEED)) $(if $(PARTITIONS),--partitions $(PARTITIONS)) $(if $(LIMIT),--limit $(LIMIT)) $(ARGS)

# RUNS / RUN: run ids (or unambiguous prefixes); empty = the newest run of each grouping on one
# dataset, worker count and mode, with its repetitions. EXPERIMENT: every run of one experiment id.
RUNS       ?=
RUN        ?=
EXPERIMENT ?=
COMPARE_OPTS = $(if $(DATASET),--dataset $(DATASET)) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) $(ARGS)

compare: $(STAMP)
	$(PY) -m bench compare $(RUNS) $(COMPARE_OPTS)

report: $(STAMP)
	$(PY) -m bench report $(RUN) $(COMPARE_OPTS)

dashboards: $(STAMP)
	$(PY) -m dashboards.build

SWEEP_DATASETS ?= COUNTRY_SKEW_R80 COUNTRY_SKEW_R50 NYC_FLIGHTS
SWEEP_WORKERS  ?= 5,10,20,50,100
SWEEP_LIMIT    ?= 1000000
sweep: $(STAMP)
	@set -e; for d in $(SWEEP_DATASETS); do \
	  $(PY) -m bench simulate --dataset $$d --grouping all --workers $(SWEEP_WORKERS) \
	    --limit $(SWEEP_LIMIT) --experiment-id sweep-$$(echo $$d | tr A-Z a-z) --plot $(ARGS); \
	done

# The default rescale matrix (docs/rescaling.md): 10 -> 12 -> 8 workers on ZIPF and NYC_FLIGHTS,
# KEY, KEY_GROUP, VNODE x STOP_THE_WORLD, SHARED_STATE, LEARNER, HANDOFF (batch 1 and 64).
rescale: $(STAMP)
	$(PY) -m bench.experiments.rescale_matrix $(ARGS)

# The four rescale protocols on Spark (HANDOFF with batch 1 and 64) x VNODE, KEY_GROUP on one recorded topic, scaling
# out 10 -> 12, and STOP_THE_WORLD, SHARED_STATE, LEARNER on KEY_GROUP scaling in 12 -> 10, 3 runs each, beside the
# simulator's five cells per routing and event on the same topic (docs/rescaling.md, "make rescale-bench").
# PEERS=flink,kstreams: also Apache Flink and Kafka Streams rescaling the same state on the same records, both events
# (bench/peers/flink, bench/peers/kstreams, built with Maven on first use).
rescale-bench: up
	$(PY) -m bench.experiments.rescale_bench $(if $(PEERS),--peers $(PEERS)) $(ARGS)

clean: down
	rm -rf .stack
