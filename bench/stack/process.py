"""Detached service processes tracked by pid files, and loopback port checks.

A pid file alone is not proof of ownership: pids are reused. A pid is treated as ours only while
`/proc/<pid>/cmdline` still contains the service's *marker* (the path of the config file the
stack generated for it), so `stop` never signals a process it did not start.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class StackError(RuntimeError):
    """A service of the local stack could not be installed, started or stopped."""


class PortInUse(StackError):
    """A loopback port the stack needs is taken by another program."""


class ServiceFailed(StackError):
    """A service exited or did not become healthy during start-up; the message has its log tail."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a TCP listener could bind `host:port` right now.

    SO_REUSEADDR mirrors what Kafka and InfluxDB do, so connections of a previous run lingering in
    TIME_WAIT do not count as "in use"; a live listener still does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def tail(path: Path, lines: int = 25) -> str:
    """The last `lines` lines of a log file ('' if it does not exist)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class ManagedProcess:
    """One detached process: its pid file, log file, and the marker that proves ownership."""

    name: str
    pid_file: Path
    log_file: Path
    marker: str

    def _cmdline(self, pid: int) -> str | None:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return None
        return raw.replace(b"\0", b" ").decode(errors="replace")

    def _read_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def running_pid(self) -> int | None:
        """The pid of our live process, or None.

        A stale pid file (process gone, or pid reused by another program) is deleted.
        """
        pid = self._read_pid()
        if pid is None:
            if self.pid_file.exists():
                self.pid_file.unlink()  # unreadable pid file: nothing we can signal
            return None
        cmdline = self._cmdline(pid)
        if cmdline is None or self.marker not in cmdline or _is_zombie(pid):
            self.pid_file.unlink(missing_ok=True)
            return None
        return pid

    def start(self, argv: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start `argv` detached (own session), stdout+stderr appended to the log file."""
        if self.marker not in " ".join(argv):
            raise ValueError(f"{self.name}: the command line must contain its marker {self.marker!r}")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        self.pid_file.write_text(f"{proc.pid}\n")
        return proc

    def wait_healthy(self, proc: subprocess.Popen, probe: Callable[[], bool], timeout_s: float) -> None:
        """Poll `probe` until it returns True.

        The child handle, not the pid file, tells whether it died: /proc/<pid>/cmdline can read
        empty while the JVM launcher re-executes itself.

        Raises: ServiceFailed with the log tail if the process exits or `timeout_s` passes first.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise ServiceFailed(
                    f"{self.name} exited during start-up; last lines of {self.log_file}:\n{tail(self.log_file)}"
                )
            if probe():
                return
            if time.monotonic() > deadline:
                raise ServiceFailed(
                    f"{self.name} did not answer within {timeout_s:.0f} s; last lines of {self.log_file}:\n"
                    f"{tail(self.log_file)}"
                )
            time.sleep(0.5)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """SIGTERM our process group, then SIGKILL after `timeout_s`. Returns True if one was running."""
        pid = self.running_pid()
        if pid is None:
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._alive(pid):
            time.sleep(0.2)
        if self._alive(pid):
            _signal_group(pid, signal.SIGKILL)
            while self._alive(pid):
                time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)
        return True

    def _alive(self, pid: int) -> bool:
        _reap(pid)
        return self._cmdline(pid) is not None and not _is_zombie(pid)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The service was started in its own session, so its pid is its process-group id: signalling the
    # group also ends helper children (none today, but cheap insurance).
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _reap(pid: int) -> None:
    # When the stack was started by this very process (tests), the service is our child: reap it so
    # it does not linger as a zombie.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
