"""The dashboards are generated from code, their JSON is current, and the provisioning and
docker-compose files fit together."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dashboards import build
from dashboards.influxql import InfluxQL
from tests.dashboards.grafana import annotation_queries, load_dashboard, panel_queries, variable_queries

ROOT = Path(__file__).resolve().parents[2] / "dashboards"


def test_committed_json_is_what_the_code_generates():
    assert build.main(["--check"]) == 0


def test_a_stale_json_file_is_detected(tmp_path, monkeypatch):
    stale = tmp_path / "stream-groupings.json"
    stale.write_text(build.render(build.DASHBOARDS["stream-groupings.json"]).replace("STD_DEV", "STDDEV"))
    monkeypatch.setattr(build, "GENERATED", tmp_path)
    assert build.main(["--check"]) == 1


def test_panels_cover_the_issue_and_use_the_provisioned_influxql_source():
    dashboard = load_dashboard()
    titles = " | ".join(p["title"] for p in dashboard["panels"])
    for needle in ("STD_DEV", "Per-worker load share", "DIST_COST", "Throughput", "Processing latency",
                   "p99.9", "Window output latency", "batches: duration", "input rate", "Dead letters",
                   "Capacity: highest input rate held", "Capacity steps", "Rescaling", "Per-worker load across a rescale",
                   "Rescale pause", "State moved", "Rescale events"):
        assert needle in titles
    source = yaml.safe_load((ROOT / "provisioning" / "datasources" / "influxdb.yml").read_text())["datasources"][0]
    assert source["type"] == "influxdb" and source["jsonData"]["dbName"] == "groupings"
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == source["uid"]
            assert target["rawQuery"] is True and target["query"].startswith("SELECT ")
    assert set(variable_queries(dashboard)) == {"run_id", "grouping", "dataset"}
    assert all("$timeFilter" in q for _, q in panel_queries(dashboard) + annotation_queries(dashboard))
    (annotation,) = dashboard["annotations"]["list"]
    assert annotation["datasource"]["uid"] == source["uid"] and 'FROM "rescale"' in annotation["query"]
    assert annotation["timeEndColumn"] == "resumed_wall_ms" and annotation["textColumn"] == "description"


def test_the_rescaling_row_comes_after_every_other_panel_and_its_panels_under_it():
    panels = load_dashboard()["panels"]
    (row,) = [p for p in panels if p["type"] == "row"]
    assert row["title"] == "Rescaling" and not row["collapsed"]
    above = [p for p in panels if p["id"] < row["id"]]
    under = [p for p in panels if p["id"] > row["id"]]
    assert under and all(p["gridPos"]["y"] + p["gridPos"]["h"] <= row["gridPos"]["y"] for p in above)
    assert all(p["gridPos"]["y"] > row["gridPos"]["y"] for p in under)
    assert len({p["id"] for p in panels}) == len(panels)


def test_processing_latency_panel_reads_the_observers_hdr_fields_and_window_latency_has_its_own():
    from bench.observer.influx_schema import OBSERVER_FIELDS

    panels = {p["title"].split(" (")[0]: [t["query"] for t in p.get("targets", [])] for p in load_dashboard()["panels"]}
    processing = " ".join(panels["Processing latency"])
    window = " ".join(panels["Window output latency"])
    for field in ("latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms"):
        assert f'"{field}"' in processing and field in OBSERVER_FIELDS
    assert "window_" not in processing and '"window_latency_p99_ms"' in window


def test_influxql_target_refuses_what_grafana_would_not_run():
    with pytest.raises(ValueError, match="not an InfluxQL SELECT"):
        InfluxQL("DROP MEASUREMENT observer")
    with pytest.raises(ValueError, match="needs a refId"):
        InfluxQL("SELECT 1").build()
    with pytest.raises(ValueError, match="resultFormat"):
        InfluxQL("SELECT 1").result_format("heatmap")
    assert InfluxQL("SELECT 1").ref_id("A").build().to_json() == {
        "query": "SELECT 1", "rawQuery": True, "refId": "A", "resultFormat": "time_series"}


def test_docker_compose_mounts_exist_and_binds_only_loopback():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert set(compose["services"]) == {"kafka", "influxdb", "grafana"}
    for name, service in compose["services"].items():
        assert ":" in service["image"] and not service["image"].endswith(":latest"), name
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
        for volume in service.get("volumes", []):
            assert (ROOT / volume.split(":")[0]).exists(), (name, volume)
    provider = yaml.safe_load((ROOT / "provisioning" / "dashboards" / "provider.yml").read_text())
    mount = next(v for v in compose["services"]["grafana"]["volumes"] if v.startswith("./generated"))
    assert mount.split(":")[1] == provider["providers"][0]["options"]["path"]


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="no compose tool on this machine")
def test_docker_compose_file_validates_with_compose():
    result = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
