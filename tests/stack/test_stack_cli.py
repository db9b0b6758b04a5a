"""`python -m bench.stack` as a user drives it: up/status/down cycles and the faults it must report."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.stack.process import port_is_free
from tests.conftest import REPO_ROOT, temporary_stack_config

pytestmark = pytest.mark.integration


def run_cli(config, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **config.to_env()}
    return subprocess.run(
        [sys.executable, "-m", "bench.stack", *args], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=300,
    )


def ports(config) -> tuple[int, ...]:
    return (config.kafka_port, config.kafka_controller_port, config.influx_port, config.influx_rpc_port)


def test_up_status_down_status_twice_and_a_second_up_says_already_running(tmp_path):
    config = temporary_stack_config(tmp_path / "stack")
    try:
        for _ in range(2):
            up = run_cli(config, "up")
            assert up.returncode == 0, up.stderr
            assert "kafka: running" in up.stdout and "influxdb: running" in up.stdout

            again = run_cli(config, "up")
            assert again.returncode == 0, again.stderr
            assert again.stdout.count("already running") == 2

            status = run_cli(config, "status")
            assert status.returncode == 0
            assert [line.split()[1] for line in status.stdout.splitlines()] == ["running", "running"]

            down = run_cli(config, "down")
            assert down.returncode == 0 and "kafka: stopped" in down.stdout

            status = run_cli(config, "status")
            assert [line.split()[1] for line in status.stdout.splitlines()] == ["stopped", "stopped"]
            assert all(port_is_free(p) for p in ports(config))

        assert "not running" in run_cli(config, "down").stdout  # idempotent
    finally:
        run_cli(config, "down")


def test_a_service_that_dies_during_start_up_prints_its_log_and_leaves_nothing_running(tmp_path):
    config = temporary_stack_config(tmp_path / "stack")
    # InfluxDB cannot create its meta directory where a plain file stands: it exits at start-up.
    (config.stack_dir / "influxdb").mkdir(parents=True)
    (config.stack_dir / "influxdb" / "meta").write_text("not a directory")
    try:
        result = run_cli(config, "up")
        assert result.returncode != 0
        assert "influxdb exited during start-up" in result.stderr
        assert "meta" in result.stderr.split("last lines of", 1)[1]  # the log tail names the cause
        status = run_cli(config, "status")
        assert [line.split()[1] for line in status.stdout.splitlines()] == ["stopped", "stopped"]
        assert all(port_is_free(p) for p in ports(config))
    finally:
        run_cli(config, "down")
