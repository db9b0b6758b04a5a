"""The local stack: a KRaft Kafka broker and InfluxDB 1.8 on 127.0.0.1, started and stopped by pid.

    from bench.stack import Stack, StackConfig
    stack = Stack(StackConfig.from_env())
    stack.up()        # installs what is missing, starts both, waits until they answer
    stack.status()    # [ServiceStatus(name, running, pid, address), ...]
    stack.down()      # stops only what `up` started; idempotent

Data, logs, generated configs and pid files live under `config.stack_dir`; artefacts under
`config.cache_dir`. Command line: `python -m bench.stack up|down|status|install`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.stack.config import StackConfig
from bench.stack.influxdb import InfluxService
from bench.stack.kafka import KafkaService
from bench.stack.process import PortInUse, ServiceFailed, StackError, port_is_free
from bench.stack.tools import ToolMissing

__all__ = [
    "PortInUse", "ServiceFailed", "ServiceStatus", "Stack", "StackConfig", "StackError", "ToolMissing",
]


@dataclass(frozen=True)
class ServiceStatus:
    """One service as `status` reports it."""

    name: str
    running: bool
    pid: int | None
    address: str
    ports: dict[str, int]


class Stack:
    """Kafka + InfluxDB of one `StackConfig`."""

    def __init__(self, config: StackConfig | None = None):
        self.config = config or StackConfig.from_env()
        self.services = (KafkaService(self.config), InfluxService(self.config))

    def status(self) -> list[ServiceStatus]:
        """Each service's state; stale pid files found on the way are removed."""
        out = []
        for svc in self.services:
            pid = svc.process.running_pid()
            out.append(ServiceStatus(svc.name, pid is not None, pid, svc.address, svc.ports))
        return out

    def up(self, log=print) -> list[ServiceStatus]:
        """Start every service that is not running and wait until each answers.

        A second call while everything runs only reports "already running".

        Raises:
            ToolMissing: java/mvn/go absent or too old (when something must be installed or run).
            PortInUse: a port is taken by another program; nothing is started.
            ServiceFailed: a service exited or stayed silent; its log tail is in the message, and
                whatever this call started is stopped again.
        """
        to_start = [svc for svc in self.services if svc.process.running_pid() is None]
        for svc in self.services:
            if svc not in to_start:
                log(f"{svc.name}: already running (pid {svc.process.running_pid()}) at {svc.address}")
        if not to_start:
            return self.status()
        taken = [
            f"port {port} ({label}) is already in use by another program"
            for svc in to_start
            for label, port in svc.ports.items()
            if not port_is_free(port)
        ]
        if taken:
            raise PortInUse(
                "; ".join(taken) + ". Stop that program or choose other ports "
                "(BENCH_KAFKA_PORT, BENCH_KAFKA_CONTROLLER_PORT, BENCH_INFLUX_PORT, BENCH_INFLUX_RPC_PORT)."
            )
        for svc in to_start:
            svc.prepare()
        started = []
        try:
            for svc in to_start:
                proc = svc.start()
                started.append(svc)
                svc.process.wait_healthy(proc, svc.healthy, svc.startup_timeout_s)
                log(f"{svc.name}: running (pid {proc.pid}) at {svc.address}")
        except BaseException:
            for svc in started:
                svc.process.stop()
            raise
        return self.status()

    def down(self, log=print) -> None:
        """Stop the services this stack started (by their pid files); idempotent."""
        for svc in reversed(self.services):
            if svc.process.stop():
                log(f"{svc.name}: stopped")
            else:
                log(f"{svc.name}: not running")
