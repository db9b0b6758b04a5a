"""Faults the stack must report clearly without starting anything: taken ports, missing or old
tools, stale pid files."""

from __future__ import annotations

import os
import socket
import stat
import subprocess

import pytest

from bench.stack import PortInUse, Stack, ToolMissing
from bench.stack import tools
from bench.stack.kafka import KafkaService
from tests.conftest import temporary_stack_config


def test_a_taken_port_fails_fast_naming_port_and_service_and_starts_nothing(tmp_path):
    config = temporary_stack_config(tmp_path / "stack")
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", config.influx_port))
    squatter.listen()
    try:
        with pytest.raises(PortInUse, match=rf"port {config.influx_port} \(influxdb http\)"):
            Stack(config).up(log=lambda _m: None)
    finally:
        squatter.close()
    assert not any(config.stack_dir.rglob("*.pid"))
    assert all(not s.running for s in Stack(config).status())


def fake_tool(folder, name: str, output: str) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{output}' >&2\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(
    "tool, output, found",
    [
        (tools.JAVA, 'openjdk version "11.0.2" 2019-01-15', "11.0.2"),
        (tools.JAVA, 'java version "1.8.0_292"', "1.8.0"),
        (tools.MAVEN, "Apache Maven 3.3.9", "3.3.9"),
        (tools.GO, "go version go1.19.4 linux/amd64", "1.19.4"),
    ],
)
def test_a_too_old_tool_is_one_line_naming_it_and_the_version_needed(tmp_path, monkeypatch, tool, output, found):
    fake_tool(tmp_path, tool.command, output)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing) as err:
        tools.require(tool)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tool.command} {'.'.join(map(str, tool.minimum))} or newer is required")
    assert f"found {found}" in message


@pytest.mark.parametrize("tool", [tools.JAVA, tools.MAVEN, tools.GO])
def test_a_missing_tool_is_one_line_naming_it(tmp_path, monkeypatch, tool):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match=rf"^{tool.command} .* or newer is required .* not on PATH$"):
        tools.require(tool)


def test_the_installed_tools_are_accepted():
    assert tools.require(tools.JAVA) >= (17,)
    assert tools.require(tools.MAVEN) >= (3, 6)


def test_a_stale_pid_file_is_detected_and_removed(tmp_path):
    config = temporary_stack_config(tmp_path / "stack")
    kafka = KafkaService(config)
    kafka.process.pid_file.parent.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    kafka.process.pid_file.write_text(f"{gone.pid}\n")

    assert [s.running for s in Stack(config).status()] == [False, False]
    assert not kafka.process.pid_file.exists()


def test_down_never_signals_a_pid_it_did_not_start(tmp_path):
    config = temporary_stack_config(tmp_path / "stack")
    kafka = KafkaService(config)
    kafka.process.pid_file.parent.mkdir(parents=True)
    bystander = subprocess.Popen(["sleep", "60"])  # a live process whose pid lands in our pid file
    try:
        kafka.process.pid_file.write_text(f"{bystander.pid}\n")
        Stack(config).down(log=lambda _m: None)
        assert bystander.poll() is None, "down signalled a process the stack did not start"
        assert not kafka.process.pid_file.exists()
    finally:
        bystander.kill()
        bystander.wait()
