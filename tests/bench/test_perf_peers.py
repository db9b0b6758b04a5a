"""The peers section's arithmetic and output parsing (no Storm, no Spark)."""

import json

import pytest

from bench.perf.peers import Comparison, comparison_rows, format_comparison
from bench.peers.peer_contract import CONTRACT
from bench.peers.storm import fitted_executors, latency_figures, parse_peer_output


def _cmp(**kw):
    base = dict(grouping="KEY", batch=200_000, harness_rate=100_000.0, storm_rate=400_000.0,
                count_only_rate=320_000.0, loads_equal=True)
    return Comparison(**{**base, **kw})


def test_ratios_are_harness_over_storm_and_over_count_only():
    c = _cmp()
    assert c.harness_over_storm == pytest.approx(0.25)
    assert c.harness_over_count_only == pytest.approx(0.3125)


def test_rows_carry_storm_as_the_harness_baseline():
    storm_row, harness_row = comparison_rows([_cmp(note="2 steady batches")])
    assert storm_row.case == "Storm peer KEY, cost 0, batch 200,000"
    assert storm_row.rate == 400_000.0 and storm_row.ratio is None
    assert "equal to the harness's" in storm_row.note
    assert harness_row.baseline_rate == 400_000.0
    assert harness_row.ratio == pytest.approx(0.25)
    assert "harness/count-only 0.312" in harness_row.note and "2 steady batches" in harness_row.note


def test_table_has_one_line_per_batch_size_and_grouping_with_both_ratios():
    text = format_comparison([_cmp(), _cmp(grouping="DYNAMIC_KEY", harness_rate=80_000.0, storm_rate=200_000.0,
                                           loads_equal=False),
                              _cmp(batch=1_000_000, harness_rate=150_000.0, count_only_rate=600_000.0)])
    lines = text.splitlines()
    assert lines[0] == ("count-only Spark query: 320,000 records/s at batch 200,000, "
                        "600,000 records/s at batch 1,000,000")
    assert lines[1].split() == ["batch", "grouping", "harness", "rec/s", "Storm", "rec/s", "harness/Storm",
                                "harness/count-only", "loads", "equal"]
    assert lines[3].split() == ["200,000", "KEY", "100,000", "400,000", "0.250", "0.312", "yes"]
    assert lines[4].split() == ["200,000", "DYNAMIC_KEY", "80,000", "200,000", "0.400", "0.250", "NO"]
    assert lines[5].split() == ["1,000,000", "KEY", "150,000", "400,000", "0.375", "0.250", "yes"]
    assert format_comparison([]) == "(no comparison)"


def test_a_batch_size_without_a_steady_batch_is_refused_before_any_run(monkeypatch):
    from bench.perf import peers

    monkeypatch.setattr(peers, "build_storm_peer", lambda: pytest.fail("nothing may run"))
    with pytest.raises(ValueError, match=r"batch sizes \[1500000\] leave no steady batch in 2,000,000 records"):
        peers.compare("127.0.0.1:1", "t", 2_000_000, batches=(200_000, 1_500_000))


def test_peer_output_is_read_from_its_last_result_line():
    out = f"storm peer KEY ...\nworker loads ...\n{CONTRACT.result_prefix} " + json.dumps({"ok": True, "steady_rate": 5.0})
    assert parse_peer_output(out + "\n") == {"ok": True, "steady_rate": 5.0}
    with pytest.raises(ValueError, match=f"the Storm peer printed no {CONTRACT.result_prefix} line"):
        parse_peer_output("Exception in thread main\n")


def test_runner_runs_the_peers_section_after_the_named_ones(monkeypatch, capsys):
    from bench.perf import __main__ as runner
    from bench.perf import peers, pipeline

    calls = []
    monkeypatch.setattr(pipeline, "_ensure_topic", lambda *a: calls.append(("topic", a[1], a[2])))
    monkeypatch.setattr(peers, "compare", lambda bootstrap, topic, records: [_cmp()])
    monkeypatch.setattr(runner, "SECTIONS", ())  # no other section: only what --peers adds
    assert runner.main(["--peers", "storm", "--no-save"]) == 0
    out = capsys.readouterr().out
    assert calls == [("topic", "perf.country_skew_r80.n2000000.p10", 2_000_000)]
    assert "== peers ==" in out
    assert any(line.split() == ["200,000", "KEY", "100,000", "400,000", "0.250", "0.312", "yes"]
               for line in out.splitlines())


def test_fitted_executors_follow_the_cores_and_keep_a_worker_per_task_when_the_cost_is_a_sleep():
    assert fitted_executors(0.0, cores=2) == ["--spout-executors", "2", "--splitter-executors", "2",
                                              "--worker-executors", "2"]
    assert fitted_executors(1.0, cores=2) == ["--spout-executors", "2", "--splitter-executors", "2",
                                              "--worker-executors", "10"]
    assert fitted_executors(0.0, cores=64) == ["--spout-executors", "10", "--splitter-executors", "10",
                                               "--worker-executors", "10"]


def test_latency_figures_decode_the_peers_histogram():
    from bench.latency import encode
    from tests.histograms import histogram

    encoded = encode(histogram([1_000, 2_000, 250_000]))  # µs
    figures = latency_figures({"latency": {"tuples": 3, "histogram": encoded}})
    assert figures["latency_tuples"] == 3 and figures["latency_p50_ms"] == pytest.approx(2.0, rel=1e-3)
    assert figures["latency_max_ms"] == pytest.approx(250.0, rel=1e-3)
    assert latency_figures({})["latency_tuples"] == 0 and latency_figures({})["latency_p99_ms"] is None
