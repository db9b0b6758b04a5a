"""Shared fixtures: one real stack (Kafka + InfluxDB) for the whole test session.

The stack runs on free loopback ports in a temporary folder, with the artefacts from the project's
cache (installed by `make install`), so it never collides with a stack a developer has running.
It is stopped at the end of the session, and the test session fails if its ports stay taken.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.stack import Stack, StackConfig
from bench.stack.process import port_is_free

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago (bound to port 0, then released)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def temporary_stack_config(folder: Path) -> StackConfig:
    """A `StackConfig` in `folder`, on free ports, sharing the project's artefact cache."""
    kafka, controller, influx, rpc = free_ports(4)
    return StackConfig(
        stack_dir=folder,
        cache_dir=StackConfig.from_env().cache_dir,
        kafka_port=kafka,
        kafka_controller_port=controller,
        influx_port=influx,
        influx_rpc_port=rpc,
    )


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Iterator[StackConfig]:
    """A running stack for the session; yields its `StackConfig` (bootstrap_servers, influx_url, ...)."""
    config = temporary_stack_config(tmp_path_factory.mktemp("stack"))
    stack = Stack(config)
    stack.up(log=lambda _msg: None)
    try:
        yield config
    finally:
        stack.down(log=lambda _msg: None)
    ports = (config.kafka_port, config.kafka_controller_port, config.influx_port, config.influx_rpc_port)
    assert all(port_is_free(p) for p in ports), "the test stack left a port taken"
