"""Where the local stack lives and which loopback ports it uses.

Every value comes from the environment so that tests (and users with a busy machine) can run a
second stack on other ports in another folder:

| variable | default | meaning |
|---|---|---|
| `BENCH_STACK_DIR` | `<repo>/.stack` | data, logs, generated configs and pid files of the services |
| `BENCH_CACHE_DIR` | `<repo>/.cache` | installed artefacts: JVM jars, the `influxd` binary, datasets |
| `BENCH_KAFKA_PORT` | 9092 | Kafka broker listener (PLAINTEXT) |
| `BENCH_KAFKA_CONTROLLER_PORT` | 9093 | KRaft controller listener |
| `BENCH_INFLUX_PORT` | 8086 | InfluxDB HTTP API (`/ping`, `/query`, `/write`, `/api/v2/write`) |
| `BENCH_INFLUX_RPC_PORT` | 8088 | InfluxDB backup/restore RPC listener (1.8 always opens it) |
| `BENCH_INFLUX_DB` | `groupings` | database created at start-up (v2 bucket `groupings/autogen`) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


def _port(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, str(default))
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise ValueError(f"{name}={port} is outside 1..65535")
    return port


@dataclass(frozen=True)
class StackConfig:
    """Folders and loopback ports of one local stack (Kafka KRaft broker + InfluxDB 1.8).

    Build it with `StackConfig.from_env()`; the dataclass itself is plain so tests can place a
    stack anywhere.
    """

    stack_dir: Path
    cache_dir: Path
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    influx_port: int = 8086
    influx_rpc_port: int = 8088
    influx_database: str = "groupings"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "StackConfig":
        """Read the `BENCH_*` variables (see the module docstring).

        Raises: ValueError for a port that is not an integer in 1..65535.
        """
        env = dict(os.environ if env is None else env)
        return cls(
            stack_dir=Path(env.get("BENCH_STACK_DIR", REPO_ROOT / ".stack")).resolve(),
            cache_dir=Path(env.get("BENCH_CACHE_DIR", REPO_ROOT / ".cache")).resolve(),
            kafka_port=_port(env, "BENCH_KAFKA_PORT", 9092),
            kafka_controller_port=_port(env, "BENCH_KAFKA_CONTROLLER_PORT", 9093),
            influx_port=_port(env, "BENCH_INFLUX_PORT", 8086),
            influx_rpc_port=_port(env, "BENCH_INFLUX_RPC_PORT", 8088),
            influx_database=env.get("BENCH_INFLUX_DB", "groupings"),
        )

    def to_env(self) -> dict[str, str]:
        """The `BENCH_*` variables that reproduce this configuration in a child process."""
        return {
            "BENCH_STACK_DIR": str(self.stack_dir),
            "BENCH_CACHE_DIR": str(self.cache_dir),
            "BENCH_KAFKA_PORT": str(self.kafka_port),
            "BENCH_KAFKA_CONTROLLER_PORT": str(self.kafka_controller_port),
            "BENCH_INFLUX_PORT": str(self.influx_port),
            "BENCH_INFLUX_RPC_PORT": str(self.influx_rpc_port),
            "BENCH_INFLUX_DB": self.influx_database,
        }

    @property
    def bootstrap_servers(self) -> str:
        """Kafka bootstrap address, e.g. `127.0.0.1:9092`."""
        return f"{HOST}:{self.kafka_port}"

    @property
    def influx_url(self) -> str:
        """InfluxDB base URL, e.g. `http://127.0.0.1:8086`."""
        return f"http://{HOST}:{self.influx_port}"

    @property
    def influx_bucket(self) -> str:
        """The v2-API bucket name of the database on InfluxDB 1.8: `<database>/autogen`."""
        return f"{self.influx_database}/autogen"
